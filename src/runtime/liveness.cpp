// Job liveness (liveness.hpp): the failure record, the watching thread, the one line.
#include "runtime/liveness.hpp"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <sstream>

#include "common/log.hpp"

namespace symmem {
namespace {

using Kind = JobFailure::Kind;

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kError: return "error";
    case Kind::kGlobalExit: return "global_exit";
    case Kind::kExited: return "exited";
    case Kind::kLost: return "lost";
    case Kind::kStoreLost: return "store_lost";
    case Kind::kUnreachable: return "unreachable";
    case Kind::kNone: break;
  }
  return "none";
}

Kind kind_of(const std::string& s) {
  for (Kind k : {Kind::kError, Kind::kGlobalExit, Kind::kExited, Kind::kLost, Kind::kStoreLost, Kind::kUnreachable})
    if (s == kind_name(k)) return k;
  return Kind::kNone;
}

// The live objects of this process, for the exit handler (a process exits once, whatever
// instances it holds).
std::mutex g_mu;
std::vector<Liveness*> g_live;
pid_t g_registered_pid = 0;

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

// ---------------------------------------------------------------- the record

std::string JobFailure::encode() const {
  std::string r = reason;
  std::replace(r.begin(), r.end(), '\n', ' ');
  return std::to_string(pe) + " " + kind_name(kind) + " " + std::to_string(code) + " " +
         (where.empty() ? "-" : where) + " " + r;
}

JobFailure JobFailure::decode(const std::string& text) {
  JobFailure f;
  std::istringstream in(text);
  std::string kind;
  in >> f.pe >> kind >> f.code >> f.where;
  f.kind = kind_of(kind);
  if (f.where == "-") f.where.clear();
  std::getline(in, f.reason);
  if (!f.reason.empty() && f.reason[0] == ' ') f.reason.erase(0, 1);
  if (f.kind == Kind::kNone) {  // not ours: still a failure, said as it came
    f.kind = Kind::kError;
    f.reason = text;
  }
  return f;
}

uint64_t JobFailure::word() const {
  return uint64_t(uint32_t(pe + 1)) | uint64_t(uint8_t(kind)) << 32 | uint64_t(uint8_t(code)) << 40;
}

JobFailure JobFailure::from_word(uint64_t w) {
  JobFailure f;
  f.pe = int(uint32_t(w)) - 1;
  f.kind = Kind(uint8_t(w >> 32));
  f.code = int(uint8_t(w >> 40));
  return f;
}

int JobFailure::exit_code() const {
  switch (kind) {
    case Kind::kError:
    case Kind::kExited: return code != 0 ? code : 1;
    case Kind::kGlobalExit: return code;
    default: return 1;
  }
}

std::string JobFailure::describe() const {
  std::string who = "PE " + std::to_string(pe) + (where.empty() ? "" : " (" + where + ")");
  std::string why = reason.empty() ? "" : ": " + reason;
  switch (kind) {
    case Kind::kError:
      return who + " stopped with an error (exit code " + std::to_string(code) + ")" + why;
    case Kind::kGlobalExit:
      return who + " called shmem_global_exit(" + std::to_string(code) + ")";
    case Kind::kExited:
      return who + " exited with code " + std::to_string(code) + " before shmem_finalize";
    case Kind::kLost:
      return who + " is gone: its connection to the job's store closed before shmem_finalize (killed, crashed, "
             "or unreachable)";
    case Kind::kStoreLost:
      return "lost the connection to the job's store" + (pe >= 0 ? ", hosted by " + who : std::string()) +
             ": its host has ended (killed or crashed)" + why;
    case Kind::kUnreachable:
      return who + " is unreachable" + why;
    case Kind::kNone: break;
  }
  return who + " failed" + why;
}

// ---------------------------------------------------------------- Liveness

Result<std::unique_ptr<Liveness>> Liveness::start(Params p, Store& store, const StoreAddress& addr,
                                                  const StoreSecurity& sec, double timeout_s) {
  SYMMEM_ASSIGN_OR_RETURN(std::unique_ptr<TcpStoreClient> w, TcpStoreClient::connect(addr, sec, p.rank, timeout_s));
  JobFailure drop;
  drop.pe = p.rank;
  drop.kind = Kind::kLost;
  drop.where = size_t(p.rank) < p.where.size() ? p.where[size_t(p.rank)] : "";
  SYMMEM_RETURN_IF_ERROR(w->watch(p.keys + "failing", p.keys + "left/" + std::to_string(p.rank), drop.encode()));
  std::unique_ptr<Liveness> l(new Liveness(std::move(p), store, std::move(w)));
  {
    std::lock_guard<std::mutex> lk(g_mu);
    g_live.push_back(l.get());
    if (g_registered_pid != ::getpid()) {  // once per process (a forked child registers its own)
      if (g_registered_pid == 0) ::pthread_atfork(nullptr, nullptr, &Liveness::in_child);
      g_registered_pid = ::getpid();
      ::on_exit(&Liveness::at_exit, nullptr);
    }
  }
  l->thread_ = std::thread([raw = l.get()] { raw->watch_loop(); });
  return l;
}

Liveness::Liveness(Params p, Store& store, std::unique_ptr<TcpStoreClient> watch)
    : p_(std::move(p)), store_(store), watch_(std::move(watch)) {}

Liveness::~Liveness() {
  leaving_.store(true);
  watch_->cancel_watch();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lk(g_mu);
  std::erase(g_live, this);
}

void Liveness::leave() {
  if (leaving_.exchange(true)) return;
  // Before the watch closes: the store must not take its closing for a death.
  (void)store_.set(p_.keys + "left/" + std::to_string(p_.rank), "1");
  watch_->cancel_watch();
  if (thread_.joinable()) thread_.join();
}

void Liveness::raise(const JobFailure& f) {
  const uint64_t w = f.word();
  for (auto* word : p_.node_words) {
    uint64_t zero = 0;
    word->compare_exchange_strong(zero, w, std::memory_order_release, std::memory_order_relaxed);
  }
  if (raised_.exchange(true)) return;
  (void)store_.create(p_.keys + "failing", f.encode());
}

void Liveness::check_word() {
  const uint64_t w = p_.my_word ? p_.my_word->load(std::memory_order_acquire) : 0;
  if (!w) return;
  JobFailure f = JobFailure::from_word(w);
  if (f.pe == p_.rank) return;  // our own record: this process is on its way out
  if (size_t(f.pe) < p_.where.size()) f.where = p_.where[size_t(f.pe)];
  if (!grace(f)) return;
  // The word has no room for the reason; the store's record has it (this thread is in a
  // wait, so the PE's store connection is free).
  if (f.kind == Kind::kError)
    if (auto r = store_.get(p_.keys + "failing", 0.5); r.ok()) f = JobFailure::decode(*r);
  end(f);
}

bool Liveness::recorded(JobFailure* f) {
  auto have = store_.check({p_.keys + "failing"});
  if (!have.ok() || !(*have)[0]) return false;
  auto r = store_.get(p_.keys + "failing", 0.5);
  if (!r.ok()) return false;
  JobFailure g = JobFailure::decode(*r);
  if (g.pe == p_.rank) return false;
  if (g.where.empty() && size_t(g.pe) < p_.where.size()) g.where = p_.where[size_t(g.pe)];
  *f = g;
  return true;
}

bool Liveness::grace(const JobFailure& f) {
  // symmem-run sees the failed PE end and stops the job within milliseconds, with its own
  // message; elsewhere a PE that reported an error or called global_exit is about to end,
  // and the launcher should see it end first (mpirun names the first non-zero exit). A PE
  // that exited 0 may be one of a job ending without shmem_finalize everywhere.
  int ms = p_.supervised ? 2000
           : f.kind == Kind::kError || f.kind == Kind::kGlobalExit ? 200
           : f.kind == Kind::kExited && f.code == 0 ? 1000
           : f.kind == Kind::kStoreLost ? 300  // the host may have finalized while we leave the last barrier
           : 0;
  for (int t = 0; t < ms; t += 10) {
    if (leaving_.load() || exiting_.load()) return false;
    sleep_ms(10);
  }
  return !leaving_.load() && !exiting_.load();
}

void Liveness::end(const JobFailure& f) {
  if (ending_.exchange(true))
    for (;;) ::pause();
  log_pe(LogLevel::kError, p_.rank, "ending this PE: the job is failing: %s", f.describe().c_str());
  std::fflush(nullptr);
  if (p_.last_words) {
    p_.last_words(f.pe);
    std::fflush(nullptr);
  }
  if (p_.hosted) {
    // The store sends the record to every watcher from its own thread: this process may
    // have heard it first. Ending now would take the store down before the others hear,
    // and they would report a lost store instead; wait until they have gone (at most 1 s;
    // this PE's own two connections stay).
    for (int t = 0; t < 100 && p_.hosted->connections() > 2; ++t) sleep_ms(10);
  }
  ::_exit(f.exit_code());
}

void Liveness::watch_loop() {
  auto r = watch_->wait_watch();
  if (leaving_.load()) return;
  JobFailure f;
  if (r.ok()) {
    f = JobFailure::decode(*r);
    if (f.pe == p_.rank) return;  // our own record came back: this process is ending
  } else {
    f.kind = Kind::kStoreLost;
    f.pe = store_host_;
    if (size_t(store_host_) < p_.where.size()) f.where = p_.where[size_t(store_host_)];
    if (store_host_ < 0) f.reason = "store at " + p_.store_url;
  }
  if (!grace(f)) return;
  end(f);
}

// A forked child (a helper process, a subprocess before its exec) must not keep the
// parent's watch connection open after the parent dies, nor report its own exit.
void Liveness::in_child() {
  for (Liveness* l : g_live) l->watch_->release_in_child();  // the child has one thread: no lock
}

void Liveness::at_exit(int status, void*) {
  std::vector<Liveness*> live;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_registered_pid != ::getpid()) return;  // a forked child that did not init
    live = g_live;
  }
  for (Liveness* l : live) {
    if (l->leaving_.load()) continue;
    l->exiting_.store(true);
    JobFailure f;
    f.pe = l->p_.rank;
    f.kind = Kind::kExited;
    f.code = status;
    f.where = size_t(f.pe) < l->p_.where.size() ? l->p_.where[size_t(f.pe)] : "";
    l->raise(f);
  }
}

}  // namespace symmem
