// The C++ init API: symmem::UniqueId (create, text form, damaged ids) and two PEs of one
// unique-id job as two Runtimes in one process (one thread each), exchanging data.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <vector>

#include "symmem/symmem.hpp"

namespace {

TEST(UniqueId, TextRoundTripAndStoreUrl) {
  symmem::UniqueId id = symmem::UniqueId::create();
  EXPECT_FALSE(id.empty());
  std::string text = id.to_string();
  EXPECT_EQ(text.rfind("symmem-uid1:", 0), 0u);
  EXPECT_EQ(text.size(), 12u + 2 * symmem::UniqueId::kSize);
  symmem::UniqueId back = symmem::UniqueId::from_string(text);
  EXPECT_TRUE(back.bytes == id.bytes);
  EXPECT_EQ(id.store_url().rfind("tcp", 0), 0u) << id.store_url();
  // Two ids are two jobs.
  EXPECT_FALSE(symmem::UniqueId::create().bytes == id.bytes);
}

TEST(UniqueId, DamagedIdsAreRefused) {
  try {
    symmem::UniqueId::from_string("symmem-uid1:00");
    FAIL() << "accepted a truncated id";
  } catch (const symmem::Error& e) {
    EXPECT_EQ(e.code(), symmem::Errc::kInvalidArgument);
  }
  symmem::UniqueId id = symmem::UniqueId::create();
  std::string text = id.to_string();
  text[12] = text[12] == '0' ? '1' : '0';  // the version field
  EXPECT_THROW(symmem::UniqueId::from_string(text), symmem::Error);
}

// Two PEs of one job cannot share a process (every PE maps the whole job at one address),
// but two jobs can: two unique-id jobs side by side, one Runtime each, with their own heaps.
TEST(InitAttr, TwoJobsSideBySideInOneProcess) {
  ::setenv("SYMMEM_STATIC_DATA", "0", 1);  // only one runtime per process can own the globals
  std::vector<std::unique_ptr<symmem::Runtime>> rts;
  for (int j = 0; j < 2; ++j) {
    symmem::InitAttr a;
    a.mode = symmem::InitMode::kUniqueId;
    a.my_pe = 0;
    a.n_pes = 1;
    a.uid = symmem::UniqueId::create();
    a.heap_size = (32u << 20) * (j + 1);
    a.instance_id = j;
    rts.push_back(std::make_unique<symmem::Runtime>(a));
  }
  auto b0 = rts[0]->alloc<long>(1), b1 = rts[1]->alloc<long>(1);
  EXPECT_NE(b0.data(), b1.data());
  EXPECT_EQ(rts[0]->heap_size(), 32u << 20);
  EXPECT_EQ(rts[1]->heap_size(), 64u << 20);
  rts[0]->p(b0.data(), 100L, 0);
  rts[1]->p(b1.data(), 101L, 0);
  EXPECT_EQ(rts[0]->g(b0.data(), 0), 100);
  EXPECT_EQ(rts[1]->g(b1.data(), 0), 101);
  EXPECT_EQ(rts[0]->ptr(b1.data(), 0), nullptr);  // one job's memory is not the other's
  rts[0]->free(b0);
  rts[1]->free(b1);
  rts.clear();
  ::unsetenv("SYMMEM_STATIC_DATA");
}

TEST(InitAttr, BadAttributesThrowWithTheReason) {
  symmem::InitAttr a;
  a.mode = symmem::InitMode::kUniqueId;
  a.my_pe = 3;
  a.n_pes = 2;
  a.uid = symmem::UniqueId::create();
  try {
    symmem::Runtime rt(a);
    FAIL() << "accepted my_pe 3 of 2";
  } catch (const symmem::Error& e) {
    EXPECT_EQ(e.code(), symmem::Errc::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("my_pe=3 is out of range for n_pes=2"), std::string::npos) << e.what();
  }
  symmem::InitAttr b;
  b.transport = "infiniband";  // engines are auto, shm and ucx
  try {
    symmem::Runtime rt(b);
    FAIL() << "accepted transport infiniband";
  } catch (const symmem::Error& e) {
    EXPECT_NE(std::string(e.what()).find("transport 'infiniband' is not one of auto, shm, ucx"), std::string::npos)
        << e.what();
  }
}

}  // namespace
