// The tunable registry: size and bool parsing, reading SHMEM_* / SYMMEM_* variables, and
// describe() covering every line of tunables.def.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"

namespace symmem {
namespace {

TEST(ParseSize, AcceptsBinaryUnits) {
  struct Case {
    const char* text;
    uint64_t bytes;
  };
  for (Case c : {Case{"512M", 512ull << 20}, Case{"2G", 2ull << 30}, Case{"1.5g", 3ull << 29},
                 Case{"4096", 4096}, Case{"64k", 64ull << 10}, Case{"16GiB", 16ull << 30}, Case{"16GB", 16ull << 30},
                 Case{"1T", 1ull << 40}, Case{"0", 0}, Case{"100b", 100}, Case{"2m", 2ull << 20}}) {
    auto r = parse_size(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().to_string();
    EXPECT_EQ(*r, c.bytes) << c.text;
  }
}

TEST(ParseSize, RejectsJunk) {
  for (const char* bad : {"", "-1", "12Q", "abc", "1.5", "G", "1GG", "1Gx", "-2G", "1e30", "99999999999T"}) {
    auto r = parse_size(bad);
    EXPECT_FALSE(r.ok()) << "accepted '" << bad << "' as " << (r.ok() ? *r : 0);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), Errc::kInvalidArgument);
    }
  }
}

TEST(ParseSize, FormatRoundTrips) {
  for (uint64_t v : std::vector<uint64_t>{0, 1, 4096, 1000, 512ull << 20, 16ull << 30, 3ull << 40}) {
    auto r = parse_size(format_size(v));
    ASSERT_TRUE(r.ok()) << format_size(v);
    EXPECT_EQ(*r, v);
  }
  EXPECT_EQ(format_size(16ull << 30), "16G");
}

TEST(ParseBool, TrueFalseAndJunk) {
  for (const char* t : {"1", "y", "yes", "true", "on", "TRUE", "Yes", "ON"}) {
    auto r = parse_bool(t);
    ASSERT_TRUE(r.ok()) << t;
    EXPECT_TRUE(*r) << t;
  }
  for (const char* f : {"0", "n", "no", "false", "off", "False", ""}) {
    auto r = parse_bool(f);
    ASSERT_TRUE(r.ok()) << f;
    EXPECT_FALSE(*r) << f;
  }
  for (const char* bad : {"2", "maybe", "yes please", "tru"}) EXPECT_FALSE(parse_bool(bad).ok()) << bad;
}

// Every tunable's variable, from the one table.
std::vector<std::string> all_env_names() {
  std::vector<std::string> names;
#define SYMMEM_TUNABLE(field, env, kind, def, help) names.push_back(env);
#include "common/tunables.def"
#undef SYMMEM_TUNABLE
  return names;
}

// Clears every tunable variable for the test and restores them afterwards.
class ConfigEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& n : all_env_names()) {
      const char* v = std::getenv(n.c_str());
      saved_.emplace_back(n, v ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(n.c_str());
    }
  }
  void TearDown() override {
    for (auto& [n, v] : saved_) {
      if (v) ::setenv(n.c_str(), v->c_str(), 1);
      else ::unsetenv(n.c_str());
    }
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(ConfigEnvTest, DefaultsWithoutEnvironment) {
  auto c = Config::from_env();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->symmetric_size, 16ull << 30);
  EXPECT_FALSE(c->debug);
  EXPECT_EQ(c->log_level, "warn");
  EXPECT_DOUBLE_EQ(c->init_timeout, 60.0);
}

TEST_F(ConfigEnvTest, ReadsSymmetricSize) {
  ::setenv("SHMEM_SYMMETRIC_SIZE", "512M", 1);
  auto c = Config::from_env();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->symmetric_size, 512ull << 20);

  ::setenv("SHMEM_SYMMETRIC_SIZE", "1.5g", 1);
  EXPECT_EQ(Config::from_env()->symmetric_size, 3ull << 29);
}

TEST_F(ConfigEnvTest, MalformedValueNamesTheVariable) {
  ::setenv("SHMEM_SYMMETRIC_SIZE", "12Q", 1);
  auto c = Config::from_env();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Errc::kInvalidArgument);
  EXPECT_NE(c.status().message().find("SHMEM_SYMMETRIC_SIZE"), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find("12Q"), std::string::npos) << c.status().message();
  ::unsetenv("SHMEM_SYMMETRIC_SIZE");

  ::setenv("SYMMEM_INIT_TIMEOUT", "soon", 1);
  c = Config::from_env();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("SYMMEM_INIT_TIMEOUT"), std::string::npos) << c.status().message();
  ::unsetenv("SYMMEM_INIT_TIMEOUT");

  ::setenv("SHMEM_DEBUG", "perhaps", 1);
  c = Config::from_env();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("SHMEM_DEBUG"), std::string::npos) << c.status().message();
  ::unsetenv("SHMEM_DEBUG");

  ::setenv("SYMMEM_WAIT_SPIN", "12abc", 1);
  c = Config::from_env();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("SYMMEM_WAIT_SPIN"), std::string::npos) << c.status().message();
}

TEST_F(ConfigEnvTest, DescribeListsEveryTunable) {
  ::setenv("SHMEM_SYMMETRIC_SIZE", "2G", 1);
  auto c = Config::from_env();
  ASSERT_TRUE(c.ok());
  auto entries = c->describe();
  auto names = all_env_names();
  ASSERT_EQ(entries.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(entries[i].env, names[i]);
    EXPECT_FALSE(entries[i].kind.empty()) << names[i];
    EXPECT_FALSE(entries[i].help.empty()) << names[i];
    EXPECT_FALSE(entries[i].default_value.empty() && entries[i].kind != "String") << names[i];
  }
  EXPECT_EQ(entries[0].env, "SHMEM_SYMMETRIC_SIZE");
  EXPECT_EQ(entries[0].value, "2G");
  EXPECT_EQ(entries[0].default_value, "16G");
}

}  // namespace
}  // namespace symmem
