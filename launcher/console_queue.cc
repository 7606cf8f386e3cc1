#include "launcher/console_queue.h"

#include <errno.h>

namespace elastic {

void ConsoleQueue::Push(int source, std::string text) {
  if (closed_ || text.empty()) return;
  per_source_[source] += text.size();
  total_ += text.size();
  chunks_.push_back(Chunk{source, std::move(text)});
}

size_t ConsoleQueue::queued(int source) const {
  auto it = per_source_.find(source);
  return it == per_source_.end() ? 0 : it->second;
}

ConsoleQueue::Flushed ConsoleQueue::Flush(const WriteFn& write, std::vector<int>* room) {
  while (!chunks_.empty()) {
    Chunk& c = chunks_.front();
    ssize_t n = write(c.text.data() + offset_, c.text.size() - offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Flushed::kBlocked;
    if (n <= 0) {  // an error, or a console that takes nothing without saying why
      Discard();
      closed_ = true;
      return Flushed::kClosed;
    }
    size_t taken = static_cast<size_t>(n);
    size_t& held = per_source_[c.source];
    bool was_over = held >= limit_;
    held -= taken;
    total_ -= taken;
    if (was_over && held < limit_ && room != nullptr) room->push_back(c.source);
    offset_ += taken;
    if (offset_ == c.text.size()) {
      if (held == 0) per_source_.erase(c.source);
      chunks_.pop_front();
      offset_ = 0;
    }
  }
  return closed_ ? Flushed::kClosed : Flushed::kEmpty;
}

size_t ConsoleQueue::Discard() {
  size_t dropped = total_;
  chunks_.clear();
  per_source_.clear();
  offset_ = 0;
  total_ = 0;
  return dropped;
}

}  // namespace elastic
