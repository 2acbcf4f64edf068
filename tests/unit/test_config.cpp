// The tunable registry: size and bool parsing, reading SHMEM_* / SYMMEM_* variables (and
// where each value came from), describe() covering every line of tunables.def, and the
// names a misspelt variable is matched against.
#include <gtest/gtest.h>

#include <algorithm>
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
    auto names = all_env_names();
    for (const auto& n : all_env_names())
      if (n.rfind("SHMEM_", 0) == 0) names.push_back("SMA_" + n.substr(6));  // the deprecated twins
    for (const auto& n : names) {
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

  ::setenv("SYMMEM_BIND", "perhaps", 1);
  c = Config::from_env();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("SYMMEM_BIND"), std::string::npos) << c.status().message();
  ::unsetenv("SYMMEM_BIND");

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

// The standard's SHMEM_DEBUG / SHMEM_INFO / SHMEM_VERSION take "any" value: set is on,
// except the words that say off.
TEST_F(ConfigEnvTest, FlagsTakeAnyValue) {
  for (const char* on : {"1", "yes", "perhaps", "verbose", "TRUE"}) {
    ::setenv("SHMEM_DEBUG", on, 1);
    ::setenv("SHMEM_INFO", on, 1);
    auto c = Config::from_env();
    ASSERT_TRUE(c.ok()) << on << ": " << c.status().to_string();
    EXPECT_TRUE(c->debug) << on;
    EXPECT_TRUE(c->info) << on;
  }
  for (const char* off : {"0", "no", "false", "OFF", ""}) {
    ::setenv("SHMEM_INFO", off, 1);
    EXPECT_FALSE(Config::from_env()->info) << "'" << off << "'";
  }
}

TEST_F(ConfigEnvTest, SourceIsDefaultEnvOrApi) {
  ::setenv("SYMMEM_INIT_TIMEOUT", "5", 1);
  ::setenv("SMA_SYMMETRIC_SIZE", "1G", 1);
  auto c = Config::from_env();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_DOUBLE_EQ(c->init_timeout, 5.0);
  EXPECT_EQ(c->symmetric_size, 1ull << 30);
  auto at = [&](Config::Id id) { return c->origin[size_t(id)]; };
  EXPECT_EQ(at(Config::Id::init_timeout).source, Source::kEnv);
  EXPECT_EQ(at(Config::Id::init_timeout).from, "SYMMEM_INIT_TIMEOUT");
  EXPECT_EQ(at(Config::Id::symmetric_size).source, Source::kEnv);
  EXPECT_EQ(at(Config::Id::symmetric_size).from, "SMA_SYMMETRIC_SIZE");
  EXPECT_EQ(at(Config::Id::op_timeout).source, Source::kDefault);
  EXPECT_EQ(at(Config::Id::op_timeout).from, "");
  // SHMEM_X wins over SMA_X
  ::setenv("SHMEM_SYMMETRIC_SIZE", "2G", 1);
  c = Config::from_env();
  EXPECT_EQ(c->symmetric_size, 2ull << 30);
  EXPECT_EQ(at(Config::Id::symmetric_size).from, "SHMEM_SYMMETRIC_SIZE");
  c->symmetric_size = 32ull << 20;
  c->set_by_api(Config::Id::symmetric_size, "heap_size");
  auto e = c->describe();
  EXPECT_EQ(e[0].value, "32M");
  EXPECT_EQ(e[0].source, Source::kApi);
  EXPECT_EQ(e[0].from, "heap_size");
  std::string table = tunable_table(*c, "SYMMETRIC");
  EXPECT_NE(table.find("32M"), std::string::npos) << table;
  EXPECT_NE(table.find("api heap_size"), std::string::npos) << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2) << table;  // header + one row
}

TEST_F(ConfigEnvTest, UniqueIdIsNeverShown) {
  const std::string uid = "symmem-uid1:" + std::string(272, 'a');
  ::setenv("SYMMEM_UNIQUEID", uid.c_str(), 1);
  auto c = Config::from_env();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->uniqueid_text, uid);
  std::string table = tunable_table(*c);
  EXPECT_EQ(table.find("aaaa"), std::string::npos) << table;
  EXPECT_NE(table.find("(hidden: 284 characters)"), std::string::npos) << table;
}

TEST_F(ConfigEnvTest, FromEnvAllCollectsEveryError) {
  ::setenv("SHMEM_SYMMETRIC_SIZE", "12Q", 1);
  ::setenv("SYMMEM_OP_TIMEOUT", "soon", 1);
  ::setenv("SYMMEM_INIT_TIMEOUT", "9", 1);
  std::vector<std::string> errors;
  Config c = Config::from_env_all(&errors);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("SHMEM_SYMMETRIC_SIZE"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("SYMMEM_OP_TIMEOUT"), std::string::npos) << errors[1];
  EXPECT_EQ(c.symmetric_size, 16ull << 30);  // a malformed value keeps the default
  EXPECT_EQ(c.origin[size_t(Config::Id::symmetric_size)].source, Source::kDefault);
  EXPECT_DOUBLE_EQ(c.init_timeout, 9.0);
}

TEST(Names, EditDistance) {
  EXPECT_EQ(edit_distance("SYMMEM_TRACE", "SYMMEM_TRACE"), 0u);
  EXPECT_EQ(edit_distance("SYMMEM_TRACEE", "SYMMEM_TRACE"), 1u);
  EXPECT_EQ(edit_distance("SYMMEM_BNID", "SYMMEM_BIND"), 1u);  // a transposition is one edit
  EXPECT_EQ(edit_distance("symmem_bind", "SYMMEM_BIND"), 0u);  // case is ignored
  EXPECT_EQ(edit_distance("SYMMEM_X", "SHMEM_X"), 2u);
  EXPECT_EQ(edit_distance("", "ABC"), 3u);
}

TEST(Names, EveryTunableIsKnownAndItsNeighbourIsSuggested) {
  for (const auto& n : all_env_names()) {
    EXPECT_TRUE(is_known_variable(n)) << n;
    EXPECT_EQ(nearest_known_variable(n + "X"), n) << n;  // the registry alone decides
  }
  EXPECT_TRUE(is_known_variable("SMA_SYMMETRIC_SIZE"));
  EXPECT_TRUE(is_known_variable("SYMMEM_STORE_SECRET"));
  EXPECT_TRUE(is_known_variable("SYMMEM_TEST_ANYTHING"));
  EXPECT_FALSE(is_known_variable("SYMMEM_LOG_LEVE"));
  EXPECT_EQ(nearest_known_variable("SYMMEM_LOG_LEVE"), "SYMMEM_LOG_LEVEL");
  EXPECT_EQ(nearest_known_variable("SHMEM_LOG_LEVEL"), "SYMMEM_LOG_LEVEL");
  EXPECT_EQ(nearest_known_variable("SYMMEM_SYMMETRIC_SIZE"), "SHMEM_SYMMETRIC_SIZE");
  EXPECT_EQ(nearest_known_variable("SYMMEM_BNID"), "SYMMEM_BIND");
  EXPECT_EQ(nearest_known_variable("SYMMEM_XYZZY"), "");
  EXPECT_EQ(nearest_known_variable("SYMMEM_BI"), "");  // two edits from a 4-letter stem: too far
}

TEST(Names, UnknownVariablesOfAnEnvironment) {
  std::vector<std::string> env = {"SYMMEM_LOG_LEVE=info", "SHMEM_SYMMETRIC_SIZE=1G", "SYMMEM_RANK=0",
                                  "PATH=/bin",            "SHMEM_FOO_BAR_BAZ=1",     "SYMMEM_TEST_FN=x:y",
                                  "SMA_DEBUGG=1",         "symmem_bind=1"};
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  auto u = unknown_variables(envp.data());
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].name, "SHMEM_FOO_BAR_BAZ");
  EXPECT_EQ(u[0].suggestion, "");
  EXPECT_EQ(u[0].message(), "SHMEM_FOO_BAR_BAZ is not a symmem variable (ignored; symmem-info lists every variable)");
  EXPECT_EQ(u[1].name, "SYMMEM_LOG_LEVE");
  EXPECT_EQ(u[1].message(), "SYMMEM_LOG_LEVE is not a symmem variable; did you mean SYMMEM_LOG_LEVEL?");
}

TEST(Names, Filter) {
  EXPECT_TRUE(name_matches("SYMMEM_WAIT_SPIN", ""));
  EXPECT_TRUE(name_matches("SYMMEM_WAIT_SPIN", "wait"));
  EXPECT_TRUE(name_matches("SYMMEM_WAIT_SPIN", "SYMMEM_*_SPIN"));
  EXPECT_TRUE(name_matches("SHMEM_INFO", "shmem_*"));
  EXPECT_FALSE(name_matches("SYMMEM_WAIT_SPIN", "SHMEM_*"));
  EXPECT_FALSE(name_matches("SYMMEM_WAIT_SPIN", "yield"));
}

}  // namespace
}  // namespace symmem
