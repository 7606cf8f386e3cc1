#include "launcher/line_splitter.h"

namespace elastic {

void LineSplitter::Emit(std::string_view line, std::string* out) const {
  out->append(prefix_);
  out->append(line);
  out->push_back('\n');
}

void LineSplitter::Feed(std::string_view data, std::string* out) {
  while (!data.empty()) {
    size_t nl = data.find('\n');
    std::string_view piece = nl == std::string_view::npos ? data : data.substr(0, nl);
    if (partial_.size() + piece.size() > max_line_) {
      // Overlong line: flush it in max_line_-sized pieces.
      size_t take = max_line_ - partial_.size();
      partial_.append(piece.substr(0, take));
      Emit(partial_, out);
      partial_.clear();
      data.remove_prefix(take);
      continue;
    }
    if (nl == std::string_view::npos) {
      partial_.append(piece);
      return;
    }
    if (partial_.empty()) {
      Emit(piece, out);
    } else {
      partial_.append(piece);
      Emit(partial_, out);
      partial_.clear();
    }
    data.remove_prefix(nl + 1);
  }
}

void LineSplitter::Finish(std::string* out) {
  if (partial_.empty()) return;
  Emit(partial_, out);
  partial_.clear();
}

}  // namespace elastic
