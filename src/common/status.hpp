// Status and Result<T>: the error model of every fallible internal call.
//
// A function that can fail returns Status (or Result<T> carrying a value); it logs once, at
// the place the real cause is known, and callers propagate with SYMMEM_RETURN_IF_ERROR /
// SYMMEM_ASSIGN_OR_RETURN. Public C++ calls turn a bad Status into symmem::Error.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include "symmem/error.hpp"

namespace symmem {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Errc code, std::string msg) : code_(code), msg_(std::move(msg)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == Errc::kOk; }
  Errc code() const { return code_; }
  const std::string& message() const { return msg_; }
  std::string to_string() const;
  // Throws symmem::Error when not ok.
  void throw_if_error() const;

 private:
  Errc code_ = Errc::kOk;
  std::string msg_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status s) : v_(std::move(s)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT
  Result(Errc c, std::string m) : v_(Status(c, std::move(m))) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

Status errno_status(Errc code, const std::string& what, int err);

}  // namespace symmem

#define SYMMEM_CONCAT_INNER(a, b) a##b
#define SYMMEM_CONCAT(a, b) SYMMEM_CONCAT_INNER(a, b)

#define SYMMEM_RETURN_IF_ERROR(expr)              \
  do {                                            \
    ::symmem::Status symmem_st_ = (expr);         \
    if (!symmem_st_.ok()) return symmem_st_;      \
  } while (0)

#define SYMMEM_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define SYMMEM_ASSIGN_OR_RETURN(lhs, expr) \
  SYMMEM_ASSIGN_OR_RETURN_IMPL(SYMMEM_CONCAT(symmem_res_, __LINE__), lhs, expr)
