// StoreState: the store's keyspace, queues, waiters and watchers, with no
// sockets. The server maps wire requests onto it; the hosting agent uses it
// in-process through StoreServer. Semantics follow PyTorch's TCPStore servers
// (1.13 daemon and 2.x libuv backend); quirks are noted where they apply.
//
// Waiters are indexed by key: a SET touches only the waiters of that key, never
// all connections. Registration, cancellation and wake-up are O(log n) per
// waiter and key (ordered sets of waiter ids per key, hash sets per
// connection), so a connection with 10^6 pending WAITs closes in linear time.
// Events (a WAIT satisfied, a watched key changed) are reported synchronously
// through the callbacks given at construction.
//
// Memory: bytes() is what the process holds for the keyspace, the queues and
// the pending WAITs, per-entry overhead included (hash nodes, heap blocks as
// glibc's malloc rounds them, the bucket array): within a few percent of the
// RSS it costs (store_state_test ByteCountFollowsTheProcessRss). Values are
// reallocated when they shrink a lot, so deleting or overwriting returns
// memory. Admit() and AdmitWait() tell the server whether a write or a WAIT
// fits StoreLimits.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "store/store_protocol.h"

namespace elastic {

using StoreConnId = uint64_t;

struct StoreStringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StoreMap = std::unordered_map<std::string, V, StoreStringHash, std::equal_to<>>;

class StoreState {
 public:
  struct Events {
    // One WAIT of `conn` has all its keys: send it STOP_WAITING.
    std::function<void(StoreConnId conn)> wait_done;
    // A key watched by `conn` (1.13 WATCH_KEY) changed; type is kWatchKey*.
    std::function<void(StoreConnId conn, uint8_t type, std::string_view key, std::string_view old_value,
                       std::string_view new_value)>
        watch;
  };
  explicit StoreState(Events events, StoreLimits limits = {})
      : events_(std::move(events)), limits_(limits) {}

  const std::string* Find(std::string_view key) const;
  size_t NumKeys() const { return kv_.size(); }
  // Bytes held, overhead included (the figure limits.memory_budget bounds).
  size_t bytes() const;

  // Would storing a value of value_size bytes under key (replacing any
  // value) fit max_value and the memory budget, on top of `extra` bytes about
  // to be added by the same request? False with *err saying which bound.
  bool Admit(std::string_view key, size_t value_size, size_t extra, std::string* err) const;
  // The bytes a write of value_size under key would add (0 if it shrinks).
  size_t Growth(std::string_view key, size_t value_size) const;
  // Would a WAIT on these keys fit the memory budget? Its missing keys cost
  // memory until they are set (issue 19 item 2: one 3 MiB WAIT took 33 MiB).
  bool AdmitWait(const std::vector<std::string_view>& keys, std::string* err) const;

  // Each mutation wakes the key's waiters and notifies its watchers.
  void Set(std::string_view key, std::string_view value);
  // PyTorch's COMPARE_SET, quirk included: a missing key with a non-empty
  // `expected` stores nothing and answers `expected`; a missing key with an
  // empty `expected` is set to `desired`. Otherwise it swaps on equality.
  // Returns the value to send back (the value after the operation).
  std::string CompareSet(std::string_view key, std::string_view expected, std::string_view desired);
  // ADD: values are decimal ASCII text. Fails (no change) if the stored value
  // is not an integer or the sum overflows.
  bool Add(std::string_view key, int64_t delta, int64_t* result, std::string* err);
  // Fails (no change) if the result would exceed limits.max_value.
  bool Append(std::string_view key, std::string_view value, std::string* err);
  bool Delete(std::string_view key);

  // True when every key exists (or names a non-empty queue).
  bool Check(const std::vector<std::string_view>& keys) const;
  // WAIT: true if ready now; otherwise registers a waiter that fires
  // wait_done(conn) once every missing key has been set.
  bool Wait(StoreConnId conn, const std::vector<std::string_view>& keys);
  // BARRIER (2.14): ADDs 1 to the counter `key` (decimal text, as ADD). True
  // once it has reached world_size: then every connection waiting in a
  // BARRIER of that key gets wait_done. Otherwise conn waits (false). Fails
  // (no change) as ADD does.
  bool Barrier(StoreConnId conn, std::string_view key, int64_t world_size, bool* done,
               std::string* err);
  // LIST_KEYS (2.14): every key, in no particular order.
  std::vector<std::string_view> Keys() const;
  // Sum of the keys' sizes: what a LIST_KEYS reply costs is known before any walk
  // (8 + NumKeys() * 8 + key_bytes()).
  size_t key_bytes() const { return key_bytes_; }

  // LIST_KEYS in steps (issue 19 item 1: one walk over 3 million keys stalled the
  // loop 2 s): a cursor over the keyspace that writes between steps do not break.
  // Every key present from StartListing to the last step is listed exactly once;
  // a key set or deleted meanwhile may or may not be. A step that finds the table
  // rehashed (a write grew it) starts over: it emits nothing and sets
  // *restarted, so the caller drops what the earlier steps gave (the table only
  // doubles, so that is rare and at most about as much work again).
  using ListingId = uint64_t;
  ListingId StartListing();
  // Calls emit(key) for up to max_keys keys; true once the listing is complete
  // (then the listing is gone).
  bool ContinueListing(ListingId id, size_t max_keys, bool* restarted,
                       const std::function<void(std::string_view key)>& emit);
  void EndListing(ListingId id);  // abandoned (its connection closed)
  // CANCEL_WAIT: drops every pending WAIT and BARRIER of conn (no STOP_WAITING
  // follows). The WAITs' keys are unlisted later by SweepDropped.
  void CancelWaits(StoreConnId conn);
  // Unlists up to max_keys keys of dropped WAITs (their memory comes back);
  // true while some are left: the server calls it a step per loop turn.
  bool SweepDropped(size_t max_keys);
  bool HasDropped() const { return !dropped_.empty(); }
  size_t NumWaiters() const { return waiters_.size() - dropped_waiters_ + barrier_waits_; }
  // Pending WAITs and BARRIERs of conn.
  size_t NumWaits(StoreConnId conn) const;

  // A connection watching a key twice is notified once (a set, not a list).
  void Watch(StoreConnId conn, std::string_view key);
  size_t NumWatches(StoreConnId conn) const;
  // Connection gone: forget its waiters and watches.
  void ForgetConnection(StoreConnId conn);

  // Queues (2.x): a push wakes one waiter of the key.
  void QueuePush(std::string_view key, std::string_view value);
  // Returns the length before popping; *value gets the front if it was > 0.
  int64_t QueuePop(std::string_view key, std::string* value);
  int64_t QueueLen(std::string_view key) const;

 private:
  using WaiterId = uint64_t;
  static constexpr StoreConnId kNoConn = 0;  // a dropped waiter's: never told
  struct Waiter {
    StoreConnId conn;
    size_t remaining;
    std::vector<std::string> keys;  // the missing keys it is listed under
    size_t cost;                    // its share of waiter_bytes_
  };
  static size_t EntryBytes(const std::string& key, const std::string& value);
  void Erase(std::unordered_map<WaiterId, Waiter>::iterator w);
  void WakeAll(std::string_view key);
  void WakeOne(std::string_view key);
  void Fire(WaiterId id, Waiter& w);
  void Unlist(WaiterId id, const std::string& key);
  void ReleaseBarrier(std::string_view key);
  void Assign(std::string* dst, std::string_view value);  // keeps bytes_ and capacity in step
  bool Watched(std::string_view key) const;
  void Notify(std::string_view key, uint8_t type, std::string_view old_value, std::string_view new_value);

  struct Listing {
    StoreMap<std::string>::const_iterator next;
    size_t bucket_count = 0;  // when `next` was taken: a rehash invalidates it
  };

  Events events_;
  StoreLimits limits_;
  size_t bytes_ = 0;         // entries and queues, overhead included (not the buckets)
  size_t waiter_bytes_ = 0;  // pending WAITs, dropped ones not yet swept included
  size_t key_bytes_ = 0;
  std::deque<WaiterId> dropped_;  // dropped WAITs whose keys are still listed
  size_t dropped_waiters_ = 0;
  ListingId next_listing_ = 1;
  std::unordered_map<ListingId, Listing> listings_;  // one per LIST_KEYS under way (few)
  StoreMap<std::string> kv_;
  StoreMap<std::deque<std::string>> queues_;
  WaiterId next_waiter_ = 1;
  std::unordered_map<WaiterId, Waiter> waiters_;
  StoreMap<std::set<WaiterId>> waiting_;  // key -> waiters listed under it, oldest first
  std::unordered_map<StoreConnId, std::unordered_set<WaiterId>> conn_waiters_;
  StoreMap<std::set<StoreConnId>> watchers_;  // key -> watching connections
  std::unordered_map<StoreConnId, StoreMap<char>> conn_watches_;  // conn -> keys it watches
  // key -> connection -> its pending BARRIERs on that key; conn -> those keys.
  StoreMap<std::map<StoreConnId, size_t>> barriers_;  // ordered: woken in a fixed order
  std::unordered_map<StoreConnId, StoreMap<char>> conn_barriers_;
  size_t barrier_waits_ = 0;
};

}  // namespace elastic
