// What a commit may take (heap/node_memory.hpp): the margin, which limit binds, the
// node's share, and that the probe reads this machine.
#include "heap/node_memory.hpp"

#include <gtest/gtest.h>

namespace symmem {
namespace {

constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;

NodeMemory machine(uint64_t total, uint64_t available, uint64_t shm_free) {
  NodeMemory m;
  m.mem_total = total;
  m.mem_available = available;
  m.shm_known = true;
  m.shm_size = total / 2;
  m.shm_free = shm_free;
  return m;
}

uint64_t margin_of(const std::string& setting, const NodeMemory& m) {
  auto r = commit_margin(setting, m);
  EXPECT_TRUE(r.ok()) << setting;
  return r.ok() ? *r : ~0ull;
}

TEST(CommitMargin, AutoIsThreePercentAtLeast256MAtMostAQuarter) {
  EXPECT_EQ(margin_of("auto", machine(100 * kGiB, 90 * kGiB, 50 * kGiB)), 100 * kGiB / 100 * 3);
  EXPECT_EQ(margin_of("auto", machine(4 * kGiB, 3 * kGiB, 2 * kGiB)), 256 * kMiB);
  NodeMemory small = machine(24 * kGiB, 20 * kGiB, 12 * kGiB);
  small.cgroup_limited = true;
  small.cgroup_limit = 384 * kMiB;  // the cgroup limit, not the machine, is the base
  EXPECT_EQ(margin_of("auto", small), 96 * kMiB);
  EXPECT_EQ(margin_of("", small), 96 * kMiB);
  EXPECT_EQ(margin_of("1G", small), kGiB);
  EXPECT_EQ(margin_of("0", small), 0u);
  EXPECT_FALSE(commit_margin("lots", small).ok());
}

TEST(CheckCommit, TheNodesShareCounts) {
  NodeMemory m = machine(24 * kGiB, 20 * kGiB, 24 * kGiB);
  EXPECT_TRUE(check_commit(8 * kGiB, 2, 2, 512 * kMiB, m).ok);
  CommitCheck c = check_commit(12 * kGiB, 2, 2, 512 * kMiB, m);  // 12 alone fits, 24 does not
  ASSERT_FALSE(c.ok);
  EXPECT_NE(c.why.find("the 2 PEs on this node commit 24.0 GiB together"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("20.0 GiB available of 24.0 GiB"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("free memory on this node"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("SYMMEM_COMMIT_MARGIN"), std::string::npos) << c.why;
  // the margin alone can refuse
  EXPECT_FALSE(check_commit(19 * kGiB, 1, 1, 2 * kGiB, m).ok);
  EXPECT_TRUE(check_commit(19 * kGiB, 1, 1, 0, m).ok);
  EXPECT_TRUE(check_commit(0, 64, 64, 0, m).ok);
  // a huge request does not wrap around
  EXPECT_FALSE(check_commit(~0ull / 2, 4, 4, 0, m).ok);
}

TEST(CheckCommit, CgroupBindsFirstAndCountsItsOwnPes) {
  NodeMemory m = machine(24 * kGiB, 20 * kGiB, 24 * kGiB);
  m.cgroup_limited = true;
  m.cgroup_version = 1;
  m.cgroup_dir = "/sys/fs/cgroup/memory/job";
  m.cgroup_limit = 4 * kGiB;
  m.cgroup_usage = 512 * kMiB;
  m.cgroup_available = 3584 * kMiB;
  CommitCheck c = check_commit(3 * kGiB, 2, 2, 256 * kMiB, m);
  ASSERT_FALSE(c.ok);
  EXPECT_NE(c.why.find("cgroup limit 4.0 GiB with 512.0 MiB used"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("/sys/fs/cgroup/memory/job/memory.limit_in_bytes"), std::string::npos) << c.why;
  // each PE in a cgroup of its own: only its own share is charged there
  EXPECT_TRUE(check_commit(3 * kGiB, 2, 1, 256 * kMiB, m).ok);
}

TEST(CheckCommit, DevShmFree) {
  NodeMemory m = machine(24 * kGiB, 20 * kGiB, 2 * kGiB);
  CommitCheck c = check_commit(1536 * kMiB, 2, 2, 0, m);
  ASSERT_FALSE(c.ok);
  EXPECT_NE(c.why.find("/dev/shm 2.0 GiB free"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("enlarge /dev/shm"), std::string::npos) << c.why;
  EXPECT_TRUE(check_commit(kGiB, 2, 2, 0, m).ok);
}

TEST(ProbeNodeMemory, ReadsThisMachine) {
  MemoryCgroup cg = find_memory_cgroup();
  NodeMemory m = probe_node_memory(cg);
  EXPECT_GT(m.mem_total, 0u);
  EXPECT_GT(m.mem_available, 0u);
  EXPECT_LE(m.mem_available, m.mem_total);
  EXPECT_TRUE(m.shm_known);  // /dev/shm is where the heaps live
  EXPECT_LE(m.shm_free, m.shm_size);
  if (m.cgroup_limited) {
    EXPECT_LE(m.cgroup_available, m.cgroup_limit);
    EXPECT_LT(m.cgroup_limit, m.mem_total);
  }
  if (cg.version) {
    EXPECT_NE(cgroup_identity(cg), 0u);
    EXPECT_EQ(cg.dir.rfind(cg.mount, 0), 0u) << cg.dir << " is not under " << cg.mount;
  }
}

}  // namespace
}  // namespace symmem
