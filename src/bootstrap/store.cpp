// PrefixStore and the control-path collectives over any Store.
//
// allgather: every rank sets "<tag>/<rank>", waits for all n keys, reads them.
// barrier:   every rank sets "<tag>/<rank>" (so a timeout can say who is missing), adds 1 to
//            "<tag>/arrived"; the rank that brings it to n sets "<tag>/done", which all wait
//            for. That is O(n) requests in all, where an allgather of empty strings is O(n^2).
#include "bootstrap/store.hpp"
#include "common/log.hpp"

#include <chrono>
#include <cstdio>

namespace symmem {

std::vector<std::string> PrefixStore::prefixed(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(prefix_ + k);
  return out;
}

Status PrefixStore::wait(const std::vector<std::string>& keys, double t) { return base_.wait(prefixed(keys), t); }

Result<std::vector<bool>> PrefixStore::check(const std::vector<std::string>& keys) {
  return base_.check(prefixed(keys));
}

namespace {

std::string seconds_str(double s) {
  char b[32];
  std::snprintf(b, sizeof(b), "%g", s);
  return b;
}

Status check_args(const char* what, const std::string& tag, int rank, int n) {
  if (n < 1 || rank < 0 || rank >= n)
    return Status(Errc::kInvalidArgument, std::string(what) + " '" + tag + "': rank " + std::to_string(rank) +
                                              " of " + std::to_string(n) + " PEs is out of range");
  return {};
}

std::vector<std::string> rank_keys(const std::string& tag, int n) {
  std::vector<std::string> keys;
  keys.reserve(n);
  for (int i = 0; i < n; ++i) keys.push_back(tag + "/" + std::to_string(i));
  return keys;
}

// After a timed-out wait: which ranks have not set their key. Empty when all have by now
// (they arrived just after the deadline).
Result<std::vector<int>> absent_ranks(Store& store, const std::vector<std::string>& keys) {
  SYMMEM_ASSIGN_OR_RETURN(std::vector<bool> present, store.check(keys));
  std::vector<int> absent;
  for (size_t i = 0; i < present.size(); ++i)
    if (!present[i]) absent.push_back(static_cast<int>(i));
  return absent;
}

Status not_arrived(const std::vector<int>& absent, int n, const std::string& tag, double timeout_s) {
  return Status(Errc::kTimeout, pes_text(absent) + " of " + std::to_string(n) + " did not arrive at '" + tag +
                                    "' within " + seconds_str(timeout_s) + " s");
}

}  // namespace

Result<std::vector<std::string>> store_allgather(Store& store, const std::string& tag, int rank, int n,
                                                 const std::string& mine, double timeout_s) {
  SYMMEM_RETURN_IF_ERROR(check_args("allgather", tag, rank, n));
  std::vector<std::string> keys = rank_keys(tag, n);
  SYMMEM_RETURN_IF_ERROR(store.set(keys[rank], mine));
  Status st = store.wait(keys, timeout_s);
  if (!st.ok()) {
    if (st.code() != Errc::kTimeout) return st;
    auto absent = absent_ranks(store, keys);
    if (!absent.ok()) return st;
    if (!absent->empty()) return not_arrived(*absent, n, tag, timeout_s);
  }
  std::vector<std::string> out(n);
  for (int i = 0; i < n; ++i) {
    SYMMEM_ASSIGN_OR_RETURN(out[i], store.get(keys[i], timeout_s));
  }
  return out;
}

Status store_barrier(Store& store, const std::string& tag, int rank, int n, double timeout_s,
                     const std::function<void()>& idle) {
  SYMMEM_RETURN_IF_ERROR(check_args("barrier", tag, rank, n));
  std::vector<std::string> keys = rank_keys(tag, n);
  const std::string done = tag + "/done";
  SYMMEM_RETURN_IF_ERROR(store.set(keys[rank], ""));
  SYMMEM_ASSIGN_OR_RETURN(int64_t arrived, store.add(tag + "/arrived", 1));
  if (arrived > n)
    return Status(Errc::kMismatch, "barrier '" + tag + "': " + std::to_string(arrived) + " arrivals for " +
                                       std::to_string(n) + " PEs (tag reused, or PEs disagree on the PE count)");
  if (arrived == n) SYMMEM_RETURN_IF_ERROR(store.set(done, ""));
  Status st;
  if (idle) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    do {
      idle();
      st = store.wait({done}, 0.002);
    } while (st.code() == Errc::kTimeout && std::chrono::steady_clock::now() < end);
  } else {
    st = store.wait({done}, timeout_s);
  }
  if (st.ok() || st.code() != Errc::kTimeout) return st;
  auto absent = absent_ranks(store, keys);
  if (!absent.ok()) return st;
  if (!absent->empty()) return not_arrived(*absent, n, tag, timeout_s);
  // Everyone arrived right at the deadline; the last one is about to publish "done".
  st = store.wait({done}, timeout_s < 5 ? timeout_s : 5);
  if (st.ok() || st.code() != Errc::kTimeout) return st;
  return Status(Errc::kTimeout, "all " + std::to_string(n) + " PEs arrived at '" + tag +
                                    "' but it did not complete within " +
                                    seconds_str(timeout_s) + " s");
}

}  // namespace symmem
