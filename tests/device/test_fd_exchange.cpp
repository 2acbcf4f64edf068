// The node's descriptor exchange (src/device/fd_exchange.hpp) inside one process: members
// on threads pass memfds and data words, over several rounds; a missing member is named
// when the deadline passes. The multi-process run is fd_exchange_mp.cpp.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "device/fd_exchange.hpp"

using symmem::device::FdExchange;

namespace {

std::string unique_tag(const char* what) { return std::string("t") + std::to_string(::getpid()) + "-" + what; }

int memfd_with(const std::string& text) {
  int fd = ::memfd_create("fdx-test", MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (::ftruncate(fd, 4096) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != ssize_t(text.size())) return -1;
  return fd;
}

std::string read_fd(int fd) {
  char buf[64] = {0};
  if (::pread(fd, buf, sizeof buf - 1, 0) < 0) return "?";
  return buf;
}

}  // namespace

TEST(FdExchange, ThreeMembersSeeEachOthersMemory) {
  const std::string tag = unique_tag("three");
  const std::vector<int> members{0, 2, 5};  // ranks need not be contiguous
  std::vector<std::string> errors(3);
  std::vector<std::thread> ts;
  for (size_t i = 0; i < members.size(); ++i) {
    ts.emplace_back([&, i] {
      const int me = members[i];
      auto x = FdExchange::open(tag, me, members, 10);
      if (!x.ok()) return void(errors[i] = x.status().message());
      for (int round = 0; round < 5; ++round) {  // back to back: a fast member runs ahead
        int fd = memfd_with("pe " + std::to_string(me) + " round " + std::to_string(round));
        std::vector<FdExchange::Received> got;
        FdExchange::Words w{uint64_t(me), uint64_t(round), 7, 8, 9, 10};
        auto s = (*x)->allgather(fd, w, &got);
        ::close(fd);
        if (!s.ok()) return void(errors[i] = s.message());
        for (size_t j = 0; j < members.size(); ++j) {
          if (members[j] == me) {
            if (got[j].fd != -1) errors[i] += "own entry has a descriptor; ";
            continue;
          }
          const std::string want = "pe " + std::to_string(members[j]) + " round " + std::to_string(round);
          if (read_fd(got[j].fd) != want) errors[i] += "read '" + read_fd(got[j].fd) + "' want '" + want + "'; ";
          if (got[j].words[0] != uint64_t(members[j]) || got[j].words[1] != uint64_t(round) || got[j].words[5] != 10)
            errors[i] += "wrong words; ";
          ::close(got[j].fd);
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  for (size_t i = 0; i < errors.size(); ++i) EXPECT_EQ(errors[i], "") << "member " << members[i];
}

TEST(FdExchange, MissingMemberIsNamedAtTheDeadline) {
  const std::string tag = unique_tag("missing");
  auto x = FdExchange::open(tag, 0, {0, 1, 3}, 0.3);
  ASSERT_TRUE(x.ok()) << x.status().message();
  int fd = memfd_with("x");
  std::vector<FdExchange::Received> got;
  auto s = (*x)->allgather(fd, FdExchange::Words{}, &got);
  ::close(fd);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), symmem::Errc::kTimeout);
  EXPECT_NE(s.message().find("nothing received from PE 1, PE 3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("could not reach PE 1, PE 3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("on PE 0"), std::string::npos) << s.message();
}

TEST(FdExchange, SocketNameTakenIsAClearError) {
  const std::string tag = unique_tag("taken");
  auto a = FdExchange::open(tag, 0, {0, 1}, 1);
  ASSERT_TRUE(a.ok());
  auto b = FdExchange::open(tag, 0, {0, 1}, 1);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("PE 0 cannot bind @symmem-" + tag + "-0"), std::string::npos)
      << b.status().message();
}

TEST(FdExchange, NotAMemberIsRefused) {
  auto a = FdExchange::open(unique_tag("nm"), 4, {0, 1}, 1);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), symmem::Errc::kInvalidArgument);
}
