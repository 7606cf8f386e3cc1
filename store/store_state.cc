#include "store/store_state.h"

#include <algorithm>
#include <charconv>

namespace elastic {
namespace {

// What the process really holds for the keyspace (issue 19 item 3: 9 million small
// keys took 927 MiB while key + value bytes counted 86 MiB). glibc's malloc gives a
// request of n bytes a chunk of max(32, n + 8 rounded up to 16); libstdc++'s
// std::string keeps up to 15 bytes inline, else capacity + 1 on the heap.
constexpr size_t MallocChunk(size_t n) { return std::max<size_t>(32, (n + 8 + 15) & ~size_t{15}); }
constexpr size_t HeapBytes(size_t capacity) { return capacity <= 15 ? 0 : MallocChunk(capacity + 1); }
// A hash node: next pointer, the key and value strings, the cached hash.
constexpr size_t kEntryNode = MallocChunk(sizeof(void*) + 2 * sizeof(std::string) + sizeof(size_t));
// A queue: its node (key, std::deque), the deque's first 512-byte block and block map.
constexpr size_t kQueueNode =
    MallocChunk(sizeof(void*) + sizeof(std::string) + sizeof(std::deque<std::string>) + sizeof(size_t)) +
    MallocChunk(512) + MallocChunk(8 * sizeof(void*));
// A pending WAIT: its Waiter record and hash node, its id in its connection's set;
// each missing key: the copy in Waiter::keys, the id in the key's waiter set, and
// (the first waiter of that key) the key's own node in the waiting index.
constexpr size_t kWaiterBytes = MallocChunk(80) + MallocChunk(32);
constexpr size_t kWaitKeyBytes = sizeof(std::string) + MallocChunk(40) + MallocChunk(96);
size_t WaitKeyCost(size_t key_size) { return kWaitKeyBytes + 2 * HeapBytes(key_size); }

}  // namespace

size_t StoreState::EntryBytes(const std::string& key, const std::string& value) {
  return kEntryNode + HeapBytes(key.capacity()) + HeapBytes(value.capacity());
}

size_t StoreState::bytes() const {
  // The bucket array: one pointer per bucket, as the table now has.
  size_t buckets = kv_.empty() ? 0 : kv_.bucket_count() * sizeof(void*);
  return bytes_ + waiter_bytes_ + buckets;
}

const std::string* StoreState::Find(std::string_view key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

size_t StoreState::Growth(std::string_view key, size_t value_size) const {
  auto it = kv_.find(key);
  if (it == kv_.end()) return kEntryNode + sizeof(void*) + HeapBytes(key.size()) + HeapBytes(value_size);
  size_t now = HeapBytes(it->second.capacity()), then = HeapBytes(value_size);
  return then > now ? then - now : 0;
}

bool StoreState::Admit(std::string_view key, size_t value_size, size_t extra, std::string* err) const {
  if (value_size > limits_.max_value) {
    *err = "value of " + std::to_string(value_size) + " bytes exceeds the limit of " +
           std::to_string(limits_.max_value);
    return false;
  }
  size_t after = bytes() + extra + Growth(key, value_size);
  if (after > limits_.memory_budget) {
    *err = "the store's memory budget of " + std::to_string(limits_.memory_budget) +
           " bytes is exhausted (" + std::to_string(bytes()) + " held)";
    return false;
  }
  return true;
}

bool StoreState::AdmitWait(const std::vector<std::string_view>& keys, std::string* err) const {
  size_t cost = kWaiterBytes, missing = 0;
  for (std::string_view k : keys) {
    if (kv_.find(k) != kv_.end()) continue;
    cost += WaitKeyCost(k.size());
    ++missing;
  }
  if (missing > 0 && bytes() + cost > limits_.memory_budget) {
    *err = "a WAIT of " + std::to_string(missing) + " missing keys (" + std::to_string(cost) +
           " bytes to wait on them) exceeds the store's memory budget of " +
           std::to_string(limits_.memory_budget) + " bytes (" + std::to_string(bytes()) + " held)";
    return false;
  }
  return true;
}

void StoreState::Assign(std::string* dst, std::string_view value) {
  bytes_ -= HeapBytes(dst->capacity());
  if (dst->capacity() > 2 * value.size() + 4096) {
    std::string(value).swap(*dst);  // assign() would keep the old capacity
  } else {
    dst->assign(value);
  }
  bytes_ += HeapBytes(dst->capacity());
}

void StoreState::Set(std::string_view key, std::string_view value) {
  auto it = kv_.find(key);
  bool created = it == kv_.end();
  bool watched = Watched(key);
  std::string old;
  if (created) {
    auto added = kv_.emplace(std::string(key), std::string(value)).first;
    bytes_ += EntryBytes(added->first, added->second);
    key_bytes_ += key.size();
  } else {
    if (watched) old = it->second;
    Assign(&it->second, value);
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
    Assign(&it->second, desired);
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

bool StoreState::Append(std::string_view key, std::string_view value, std::string* err) {
  auto it = kv_.find(key);
  size_t size = (it == kv_.end() ? 0 : it->second.size()) + value.size();
  if (size > limits_.max_value) {
    *err = "APPEND would make a value of " + std::to_string(size) + " bytes (limit " +
           std::to_string(limits_.max_value) + ")";
    return false;
  }
  if (it == kv_.end()) {
    Set(key, value);
    return true;
  }
  bool watched = Watched(key);
  std::string old = watched ? it->second : std::string();
  bytes_ -= HeapBytes(it->second.capacity());
  it->second.append(value);
  bytes_ += HeapBytes(it->second.capacity());
  WakeAll(key);
  if (watched) Notify(key, kWatchKeyUpdated, old, it->second);
  return true;
}

bool StoreState::Delete(std::string_view key) {
  auto it = kv_.find(key);
  if (it == kv_.end()) return false;
  bytes_ -= EntryBytes(it->first, it->second);
  std::string old = std::move(it->second);
  key_bytes_ -= key.size();
  // Erasing invalidates only iterators to this entry: a listing about to read it moves on.
  for (auto& [id, l] : listings_)
    if (l.next == it) ++l.next;
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
  Waiter w{conn, 0, {}, kWaiterBytes};
  for (std::string_view k : keys) {
    if (kv_.find(k) != kv_.end()) continue;  // only keys not yet set count, as PyTorch
    auto it = waiting_.find(k);
    if (it == waiting_.end()) it = waiting_.emplace(std::string(k), std::set<WaiterId>()).first;
    if (!it->second.insert(id).second) continue;  // the same key twice counts once
    w.keys.emplace_back(k);
    ++w.remaining;
    w.cost += WaitKeyCost(k.size());
  }
  waiter_bytes_ += w.cost;
  waiters_.emplace(id, std::move(w));
  conn_waiters_[conn].insert(id);
  return false;
}

size_t StoreState::NumWaits(StoreConnId conn) const {
  size_t n = 0;
  if (auto it = conn_waiters_.find(conn); it != conn_waiters_.end()) n += it->second.size();
  if (auto it = conn_barriers_.find(conn); it != conn_barriers_.end()) {
    for (const auto& [key, unused] : it->second) n += barriers_.find(key)->second.at(conn);
  }
  return n;
}

void StoreState::Unlist(WaiterId id, const std::string& key) {
  auto it = waiting_.find(key);
  if (it == waiting_.end()) return;
  it->second.erase(id);
  if (it->second.empty()) waiting_.erase(it);
}

bool StoreState::Barrier(StoreConnId conn, std::string_view key, int64_t world_size, bool* done,
                         std::string* err) {
  int64_t count = 0;
  if (!Add(key, 1, &count, err)) return false;
  *done = count >= world_size;
  if (*done) {
    ReleaseBarrier(key);
    return true;
  }
  auto it = barriers_.find(key);
  if (it == barriers_.end()) it = barriers_.emplace(std::string(key), std::map<StoreConnId, size_t>()).first;
  ++it->second[conn];
  conn_barriers_[conn].emplace(std::string(key), 0);
  ++barrier_waits_;
  return true;
}

void StoreState::ReleaseBarrier(std::string_view key) {
  auto it = barriers_.find(key);
  if (it == barriers_.end()) return;
  std::map<StoreConnId, size_t> waiting = std::move(it->second);
  barriers_.erase(it);
  for (const auto& [c, n] : waiting) {
    barrier_waits_ -= n;
    auto cb = conn_barriers_.find(c);
    if (cb != conn_barriers_.end()) {
      if (auto k = cb->second.find(key); k != cb->second.end()) cb->second.erase(k);
      if (cb->second.empty()) conn_barriers_.erase(cb);
    }
  }
  for (const auto& [c, n] : waiting) {
    for (size_t i = 0; i < n && events_.wait_done; ++i) events_.wait_done(c);
  }
}

std::vector<std::string_view> StoreState::Keys() const {
  std::vector<std::string_view> keys;
  keys.reserve(kv_.size());
  for (const auto& [k, v] : kv_) keys.emplace_back(k);
  return keys;
}

StoreState::ListingId StoreState::StartListing() {
  ListingId id = next_listing_++;
  listings_[id] = Listing{kv_.cbegin(), kv_.bucket_count()};
  return id;
}

// Inserting without a rehash keeps every iterator valid and the order of the
// entries already there (std::unordered_map); a rehash (the bucket count
// changed) reorders them all, so the listing starts over.
bool StoreState::ContinueListing(ListingId id, size_t max_keys, bool* restarted,
                                 const std::function<void(std::string_view key)>& emit) {
  *restarted = false;
  auto it = listings_.find(id);
  if (it == listings_.end()) return true;
  Listing& l = it->second;
  if (l.bucket_count != kv_.bucket_count()) {
    l = Listing{kv_.cbegin(), kv_.bucket_count()};
    *restarted = true;
    return false;  // nothing emitted: the caller drops the earlier steps' keys first
  }
  for (size_t n = 0; n < max_keys && l.next != kv_.cend(); ++n, ++l.next) emit(l.next->first);
  if (l.next != kv_.cend()) return false;
  listings_.erase(it);
  return true;
}

void StoreState::EndListing(ListingId id) { listings_.erase(id); }

void StoreState::CancelWaits(StoreConnId conn) {
  if (auto cb = conn_barriers_.find(conn); cb != conn_barriers_.end()) {
    for (const auto& [key, unused] : cb->second) {
      auto it = barriers_.find(key);
      if (it == barriers_.end()) continue;
      auto mine = it->second.find(conn);
      if (mine != it->second.end()) {
        barrier_waits_ -= mine->second;
        it->second.erase(mine);
      }
      if (it->second.empty()) barriers_.erase(it);
    }
    conn_barriers_.erase(cb);
  }
  // Its WAITs are dropped at once (no STOP_WAITING can follow) and their keys
  // unlisted later, a step at a time (SweepDropped): one connection's 4,096
  // WAITs of many keys each took 10-18 s to unlist on the loop (issue 19 item 2).
  auto it = conn_waiters_.find(conn);
  if (it == conn_waiters_.end()) return;
  for (WaiterId id : it->second) {
    auto w = waiters_.find(id);
    if (w == waiters_.end()) continue;
    w->second.conn = kNoConn;
    ++dropped_waiters_;
    dropped_.push_back(id);
  }
  conn_waiters_.erase(it);
}

bool StoreState::SweepDropped(size_t max_keys) {
  while (!dropped_.empty() && max_keys > 0) {
    WaiterId id = dropped_.front();
    auto w = waiters_.find(id);
    if (w == waiters_.end()) {  // fired meanwhile: its keys are gone already
      dropped_.pop_front();
      continue;
    }
    std::vector<std::string>& keys = w->second.keys;
    for (; !keys.empty() && max_keys > 0; --max_keys) {
      Unlist(id, keys.back());
      keys.pop_back();
    }
    if (!keys.empty()) break;
    Erase(w);
    dropped_.pop_front();
  }
  return !dropped_.empty();
}

void StoreState::Erase(std::unordered_map<WaiterId, Waiter>::iterator w) {
  waiter_bytes_ -= w->second.cost;
  if (w->second.conn == kNoConn) --dropped_waiters_;
  waiters_.erase(w);
}

void StoreState::Fire(WaiterId id, Waiter& w) {
  StoreConnId conn = w.conn;
  // Its remaining keys were all consumed; drop any listing under keys woken earlier.
  Erase(waiters_.find(id));
  if (conn == kNoConn) return;  // dropped (cancelled, or its connection closed): nobody to tell
  auto c = conn_waiters_.find(conn);
  if (c != conn_waiters_.end()) {
    c->second.erase(id);
    if (c->second.empty()) conn_waiters_.erase(c);
  }
  if (events_.wait_done) events_.wait_done(conn);
}

void StoreState::WakeAll(std::string_view key) {
  if (waiting_.empty()) return;
  auto it = waiting_.find(key);
  if (it == waiting_.end()) return;
  std::set<WaiterId> ids = std::move(it->second);
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
  WaiterId id = *it->second.begin();
  it->second.erase(it->second.begin());
  if (it->second.empty()) waiting_.erase(it);
  auto w = waiters_.find(id);
  if (w != waiters_.end() && --w->second.remaining == 0) Fire(id, w->second);
}

void StoreState::Watch(StoreConnId conn, std::string_view key) {
  auto it = watchers_.find(key);
  if (it == watchers_.end()) it = watchers_.emplace(std::string(key), std::set<StoreConnId>()).first;
  it->second.insert(conn);
  conn_watches_[conn].emplace(std::string(key), 0);
}

size_t StoreState::NumWatches(StoreConnId conn) const {
  auto it = conn_watches_.find(conn);
  return it == conn_watches_.end() ? 0 : it->second.size();
}

void StoreState::ForgetConnection(StoreConnId conn) {
  CancelWaits(conn);
  auto it = conn_watches_.find(conn);
  if (it == conn_watches_.end()) return;
  for (const auto& [key, unused] : it->second) {
    auto w = watchers_.find(key);
    if (w == watchers_.end()) continue;
    w->second.erase(conn);
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
  std::vector<StoreConnId> conns(it->second.begin(), it->second.end());  // a callback may close one
  for (StoreConnId c : conns) events_.watch(c, type, key, old_value, new_value);
}

void StoreState::QueuePush(std::string_view key, std::string_view value) {
  auto it = queues_.find(key);
  if (it == queues_.end()) {
    it = queues_.emplace(std::string(key), std::deque<std::string>()).first;
    bytes_ += kQueueNode + HeapBytes(it->first.capacity());
  }
  it->second.emplace_back(value);
  bytes_ += sizeof(std::string) + HeapBytes(it->second.back().capacity());
  WakeOne(key);
}

int64_t StoreState::QueuePop(std::string_view key, std::string* value) {
  auto it = queues_.find(key);
  if (it == queues_.end()) return 0;
  int64_t len = static_cast<int64_t>(it->second.size());
  if (len > 0) {
    bytes_ -= sizeof(std::string) + HeapBytes(it->second.front().capacity());
    *value = std::move(it->second.front());
    it->second.pop_front();
  }
  if (it->second.empty()) {
    bytes_ -= kQueueNode + HeapBytes(it->first.capacity());
    queues_.erase(it);
  }
  return len;
}

int64_t StoreState::QueueLen(std::string_view key) const {
  auto it = queues_.find(key);
  return it == queues_.end() ? 0 : static_cast<int64_t>(it->second.size());
}

}  // namespace elastic
