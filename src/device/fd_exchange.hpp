// File descriptors between the processes of one node, over unix-domain sockets with
// SCM_RIGHTS (never pidfd_getfd, which needs ptrace rights that containers and Yama deny).
//
// Each member binds one datagram socket in the abstract namespace,
// "\0symmem-<tag>-<rank>": nothing on the file system to go stale, no sun_path length
// trouble. allgather() sends this member's descriptor (and a few words of data) to every
// other member and receives one from each. Sends are non-blocking and retried while the
// member drains its own socket, so two members filling each other's queues cannot
// deadlock, and a member whose socket is not bound yet is retried until the deadline.
// Messages carry the round number: a fast member's next round is kept until asked for.
// The sender's uid is checked (SCM_CREDENTIALS): another user on the host cannot inject
// a descriptor. Every wait has a deadline and its error names the members that did not
// answer. The device heap passes cuMem POSIX-fd handles through it; the tests pass memfds.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.hpp"

namespace symmem::device {

class FdExchange {
 public:
  static constexpr int kWords = 6;  // data words that travel with each descriptor
  using Words = std::array<uint64_t, kWords>;

  // Binds this member's socket. `tag` names the group (unique per job and instance; at
  // most 80 characters), `members` are the ranks taking part (this one included).
  static Result<std::unique_ptr<FdExchange>> open(const std::string& tag, int rank, std::vector<int> members,
                                                   double timeout_s);
  ~FdExchange();
  FdExchange(const FdExchange&) = delete;
  FdExchange& operator=(const FdExchange&) = delete;

  struct Received {
    int fd = -1;  // owned by the caller (close it); -1 for this member's own entry
    Words words{};
  };
  // One round: sends (fd, words) to every other member, receives theirs. out[i] belongs
  // to members[i]. On error every descriptor received in this round is closed and the
  // message names the members that did not answer in time (or the system call that failed).
  Status allgather(int fd, const Words& words, std::vector<Received>* out);

  const std::string& socket_name() const { return name_; }

 private:
  FdExchange() = default;
  Status send_to(int peer, int fd, const Words& w, bool* sent);
  Status drain();  // receives what is queued (non-blocking)

  std::string tag_, name_;
  int rank_ = 0;
  std::vector<int> members_;
  double timeout_s_ = 60;
  int sock_ = -1;
  uint64_t round_ = 0;
  // (round, sender rank) -> what arrived, kept until that round asks for it
  std::map<std::pair<uint64_t, int>, Received> pending_;
};

// "\0symmem-<tag>-<rank>" as written in messages (the leading NUL shown as '@').
std::string fd_socket_display(const std::string& tag, int rank);

}  // namespace symmem::device
