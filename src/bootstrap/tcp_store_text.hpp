// What the store's server and client files share (tcp_store_server.cpp, tcp_store_client.cpp).
#pragma once

#include <cstdio>
#include <string>

namespace symmem::store_text {

inline std::string seconds_str(double s) {
  char b[32];
  std::snprintf(b, sizeof(b), "%g", s);
  return b;
}

}  // namespace symmem::store_text
