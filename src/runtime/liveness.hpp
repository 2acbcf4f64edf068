// Job liveness: how every PE learns that another PE of its job failed, whatever started
// the job (symmem-run, srun, mpirun, torchrun, a script with a unique id).
//
// The state is one record, "job failing: PE p, what happened (kind, code), where, why";
// the first one raised wins. Any route may raise it (Liveness::raise) and it is seen two
// ways:
//   - on this node, a word in every PE's metadata (MetaFixed::job_failing) that every
//     waiting loop reads on its slow path, before it sleeps (Runtime::Impl::wait_adaptive):
//     nothing on the data path;
//   - across the job, a key in the bootstrap store. Every PE keeps a second store
//     connection for the life of the job and a thread blocked on it (TcpStoreClient::watch).
//     When that connection closes before the PE finalized (it died), the store itself
//     creates the key; a PE that stops with an error or calls shmem_global_exit creates it
//     first, with its code and message. The store pushes the key to every watcher at once.
//     When the store's host dies, the watchers see their connections close.
// Whoever learns first ends this process: one line naming the PE, then _exit with the code.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store.hpp"
#include "bootstrap/tcp_store.hpp"
#include "common/status.hpp"

namespace symmem {

struct JobFailure {
  enum class Kind : uint8_t {
    kNone = 0,
    kError,       // the PE stopped with an error (its message says why), exit code `code`
    kGlobalExit,  // the PE called shmem_global_exit(code)
    kExited,      // the process exited with `code` before shmem_finalize
    kLost,        // its store connection closed before shmem_finalize: killed, crashed, unreachable
    kStoreLost,   // this PE lost the job's store: the PE hosting it ended (pe = that PE, or -1)
    kUnreachable, // a network route to it failed or timed out (UCX): killed, hung or cut off
  };
  int pe = -1;
  Kind kind = Kind::kNone;
  int code = 1;
  std::string where;   // "host:pid" of the failed PE, when known
  std::string reason;  // one line, may be empty

  // The store's form ("<pe> <kind> <code> <where> <reason>") and the node word's
  // (pe + 1 | kind << 32 | code << 40; the rest comes from what init learnt of each PE).
  std::string encode() const;
  static JobFailure decode(const std::string& text);
  uint64_t word() const;
  static JobFailure from_word(uint64_t w);
  // What the other PEs exit with: the failed PE's code when it had one, else 1.
  int exit_code() const;
  // The line the other PEs print (after the logger's "[pe N host:pid] error: ").
  std::string describe() const;
};

class Liveness {
 public:
  struct Params {
    int rank = 0;
    int npes = 1;
    bool supervised = false;  // started by symmem-run, which stops the job itself (it reports first)
    std::atomic<uint64_t>* my_word = nullptr;        // this PE's MetaFixed::job_failing
    std::vector<std::atomic<uint64_t>*> node_words;  // every on-node PE's (this one's too)
    std::vector<std::string> where;                  // "host:pid" of every PE
    std::string keys;                                // store key prefix of this init ("init/i0/e1/live/")
    std::string store_url;
    // This PE's process hosts the store: it lets the others hear of the failure from it
    // before it ends (the store goes with it).
    TcpStoreServer* hosted = nullptr;
    // Called once by end() before the process ends, with the failed PE (-1 unknown): the
    // DFX tools' last words (a trace's rings copied off their hosts). Bounded by its callee.
    std::function<void(int failed_pe)> last_words;
  };
  // Opens the watch connection and registers it with the store (so a death from now on is
  // seen), then starts the watching thread. `store` (the PE's ordinary connection) is used
  // to raise and to leave; it must outlive this object.
  static Result<std::unique_ptr<Liveness>> start(Params p, Store& store, const StoreAddress& addr,
                                                 const StoreSecurity& sec, double timeout_s);
  ~Liveness();

  // Marks the job failing: in this node's words, then in the store (first record wins).
  // Returns; the caller then ends its process (or, for a peer it found dead, lets the
  // record end this one).
  void raise(const JobFailure& f);
  // The waits' slow path: the node word, read by the thread that waits.
  void check_word();
  // The failure another PE recorded in the store (the job's first), if any: a PE that then
  // sees a peer's connection drop reports that failure, not the drop it caused.
  bool recorded(JobFailure* f);
  // Ends this process for the record: one line, _exit(f.exit_code()). Only one thread
  // prints; another that gets here blocks until the process is gone.
  [[noreturn]] void end(const JobFailure& f);
  // shmem_finalize, after the last barrier: this PE leaves the job; nothing is reported
  // after this, and the store no longer takes this PE's closing connection for a death.
  void leave();
  // The PE that hosts the store (known after the ready barrier), for messages.
  void set_store_host(int pe) { store_host_ = pe; }

  const Params& params() const { return p_; }

 private:
  Liveness(Params p, Store& store, std::unique_ptr<TcpStoreClient> watch);
  void watch_loop();
  // Gives the failed PE time to end and the launcher time to act (symmem-run, mpirun name
  // the PE that failed first); false when this PE left or is exiting meanwhile.
  bool grace(const JobFailure& f);
  static void at_exit(int status, void* arg);
  static void in_child();

  Params p_;
  Store& store_;
  std::unique_ptr<TcpStoreClient> watch_;
  std::thread thread_;
  std::atomic<bool> leaving_{false};
  std::atomic<bool> exiting_{false};
  std::atomic<bool> ending_{false};
  std::atomic<bool> raised_{false};
  int store_host_ = -1;
};

}  // namespace symmem
