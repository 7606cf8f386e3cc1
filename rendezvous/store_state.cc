#include "rendezvous/store_state.h"

#include <algorithm>
#include <charconv>

#include "rendezvous/store_protocol.h"

namespace elastic {
namespace {

template <typename T>
void EraseValue(std::vector<T>* v, const T& x) {
  v->erase(std::remove(v->begin(), v->end(), x), v->end());
}

}  // namespace

const std::string* StoreState::Find(std::string_view key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

void StoreState::Set(std::string_view key, std::string_view value) {
  auto it = kv_.find(key);
  bool created = it == kv_.end();
  bool watched = Watched(key);
  std::string old;
  if (created) {
    kv_.emplace(std::string(key), std::string(value));
  } else {
    if (watched) old = std::move(it->second);
    it->second.assign(value);
  }
  WakeAll(key);
  if (watched) Notify(key, created ? kWatchKeyCreated : kWatchKeyUpdated, old, value);
}

std::string StoreState::CompareSet(std::string_view key, std::string_view expected,
                                   std::string_view desired) {
  auto it = kv_.find(key);
  if (it == kv_.end()) {
    // PyTorch quirk: "lying" to the caller when the key is missing.
    if (!expected.empty()) return std::string(expected);
    Set(key, desired);
    return std::string(desired);
  }
  if (it->second == expected) {
    std::string old = it->second;
    it->second.assign(desired);
    WakeAll(key);
    if (Watched(key)) Notify(key, kWatchKeyUpdated, old, desired);
    return std::string(desired);
  }
  return it->second;
}

bool StoreState::Add(std::string_view key, int64_t delta, int64_t* result, std::string* err) {
  int64_t sum = delta;
  if (const std::string* cur = Find(key)) {
    int64_t old = 0;
    auto [end, ec] = std::from_chars(cur->data(), cur->data() + cur->size(), old);
    if (ec != std::errc() || end != cur->data() + cur->size()) {
      *err = "ADD on a value that is not a decimal integer";
      return false;
    }
    if (__builtin_add_overflow(old, delta, &sum)) {
      *err = "ADD overflows int64";
      return false;
    }
  }
  *result = sum;
  Set(key, std::to_string(sum));
  return true;
}

void StoreState::Append(std::string_view key, std::string_view value) {
  auto it = kv_.find(key);
  if (it == kv_.end()) {
    Set(key, value);
    return;
  }
  bool watched = Watched(key);
  std::string old = watched ? it->second : std::string();
  it->second.append(value);
  WakeAll(key);
  if (watched) Notify(key, kWatchKeyUpdated, old, it->second);
}

bool StoreState::Delete(std::string_view key) {
  auto it = kv_.find(key);
  if (it == kv_.end()) return false;
  std::string old = std::move(it->second);
  kv_.erase(it);
  if (Watched(key)) Notify(key, kWatchKeyDeleted, old, {});
  return true;
}

bool StoreState::Check(const std::vector<std::string_view>& keys) const {
  for (std::string_view k : keys) {
    if (kv_.find(k) != kv_.end()) continue;
    auto q = queues_.find(k);
    if (q != queues_.end() && !q->second.empty()) continue;
    return false;
  }
  return true;
}

bool StoreState::Wait(StoreConnId conn, const std::vector<std::string_view>& keys) {
  if (Check(keys)) return true;
  WaiterId id = next_waiter_++;
  Waiter w{conn, 0, {}};
  for (std::string_view k : keys) {
    if (kv_.find(k) != kv_.end()) continue;  // only keys not yet set count, as PyTorch
    w.keys.emplace_back(k);
    auto it = waiting_.find(k);
    if (it == waiting_.end()) it = waiting_.emplace(std::string(k), std::vector<WaiterId>()).first;
    it->second.push_back(id);
    ++w.remaining;
  }
  waiters_.emplace(id, std::move(w));
  conn_waiters_[conn].push_back(id);
  return false;
}

void StoreState::Unlist(WaiterId id, const std::string& key) {
  auto it = waiting_.find(key);
  if (it == waiting_.end()) return;
  EraseValue(&it->second, id);
  if (it->second.empty()) waiting_.erase(it);
}

bool StoreState::Barrier(StoreConnId conn, std::string_view key, int64_t world_size, bool* done,
                         std::string* err) {
  int64_t count = 0;
  if (!Add(key, 1, &count, err)) return false;
  *done = count >= world_size;
  if (!*done) {
    auto it = barriers_.find(key);
    if (it == barriers_.end()) it = barriers_.emplace(std::string(key), std::vector<StoreConnId>()).first;
    it->second.push_back(conn);
    conn_barriers_[conn].emplace_back(key);
    return true;
  }
  auto it = barriers_.find(key);
  if (it == barriers_.end()) return true;
  std::vector<StoreConnId> waiting = std::move(it->second);
  barriers_.erase(it);
  for (StoreConnId c : waiting) {
    auto cb = conn_barriers_.find(c);
    if (cb != conn_barriers_.end()) {
      EraseValue(&cb->second, std::string(key));
      if (cb->second.empty()) conn_barriers_.erase(cb);
    }
    if (events_.wait_done) events_.wait_done(c);
  }
  return true;
}

std::vector<std::string_view> StoreState::Keys() const {
  std::vector<std::string_view> keys;
  keys.reserve(kv_.size());
  for (const auto& [k, v] : kv_) keys.emplace_back(k);
  return keys;
}

void StoreState::CancelWaits(StoreConnId conn) {
  if (auto cb = conn_barriers_.find(conn); cb != conn_barriers_.end()) {
    for (const std::string& key : cb->second) {
      auto it = barriers_.find(key);
      if (it == barriers_.end()) continue;
      EraseValue(&it->second, conn);
      if (it->second.empty()) barriers_.erase(it);
    }
    conn_barriers_.erase(cb);
  }
  auto it = conn_waiters_.find(conn);
  if (it == conn_waiters_.end()) return;
  for (WaiterId id : it->second) {
    auto w = waiters_.find(id);
    if (w == waiters_.end()) continue;
    for (const std::string& k : w->second.keys) Unlist(id, k);
    waiters_.erase(w);
  }
  conn_waiters_.erase(it);
}

void StoreState::Fire(WaiterId id, Waiter& w) {
  StoreConnId conn = w.conn;
  // Its remaining keys were all consumed; drop any listing under keys woken earlier.
  waiters_.erase(id);
  auto c = conn_waiters_.find(conn);
  if (c != conn_waiters_.end()) {
    EraseValue(&c->second, id);
    if (c->second.empty()) conn_waiters_.erase(c);
  }
  if (events_.wait_done) events_.wait_done(conn);
}

void StoreState::WakeAll(std::string_view key) {
  if (waiting_.empty()) return;
  auto it = waiting_.find(key);
  if (it == waiting_.end()) return;
  std::vector<WaiterId> ids = std::move(it->second);
  waiting_.erase(it);
  for (WaiterId id : ids) {
    auto w = waiters_.find(id);
    if (w == waiters_.end()) continue;
    if (--w->second.remaining == 0) Fire(id, w->second);
  }
}

void StoreState::WakeOne(std::string_view key) {
  auto it = waiting_.find(key);
  if (it == waiting_.end()) return;
  WaiterId id = it->second.front();
  it->second.erase(it->second.begin());
  if (it->second.empty()) waiting_.erase(it);
  auto w = waiters_.find(id);
  if (w != waiters_.end() && --w->second.remaining == 0) Fire(id, w->second);
}

void StoreState::Watch(StoreConnId conn, std::string_view key) {
  auto it = watchers_.find(key);
  if (it == watchers_.end()) it = watchers_.emplace(std::string(key), std::vector<StoreConnId>()).first;
  it->second.push_back(conn);
  conn_watches_[conn].emplace_back(key);
}

void StoreState::ForgetConnection(StoreConnId conn) {
  CancelWaits(conn);
  auto it = conn_watches_.find(conn);
  if (it == conn_watches_.end()) return;
  for (const std::string& key : it->second) {
    auto w = watchers_.find(key);
    if (w == watchers_.end()) continue;
    EraseValue(&w->second, conn);
    if (w->second.empty()) watchers_.erase(w);
  }
  conn_watches_.erase(it);
}

bool StoreState::Watched(std::string_view key) const {
  return !watchers_.empty() && watchers_.find(key) != watchers_.end();
}

void StoreState::Notify(std::string_view key, uint8_t type, std::string_view old_value,
                        std::string_view new_value) {
  auto it = watchers_.find(key);
  if (it == watchers_.end() || !events_.watch) return;
  std::vector<StoreConnId> conns = it->second;  // a callback may close a connection
  for (StoreConnId c : conns) events_.watch(c, type, key, old_value, new_value);
}

void StoreState::QueuePush(std::string_view key, std::string_view value) {
  auto it = queues_.find(key);
  if (it == queues_.end()) it = queues_.emplace(std::string(key), std::deque<std::string>()).first;
  it->second.emplace_back(value);
  WakeOne(key);
}

int64_t StoreState::QueuePop(std::string_view key, std::string* value) {
  auto it = queues_.find(key);
  if (it == queues_.end()) return 0;
  int64_t len = static_cast<int64_t>(it->second.size());
  if (len > 0) {
    *value = std::move(it->second.front());
    it->second.pop_front();
  }
  if (it->second.empty()) queues_.erase(it);
  return len;
}

int64_t StoreState::QueueLen(std::string_view key) const {
  auto it = queues_.find(key);
  return it == queues_.end() ? 0 : static_cast<int64_t>(it->second.size());
}

}  // namespace elastic
