// The init, finalize, unique-id, store-TLS and instance calls of the C API. The C layer
// owns the only process-wide state of symmem: the instances this process has initialized
// (by id), which one the OpenSHMEM calls act on (g_default), and the TLS setting that
// shmemx_set_conf_store_tls left for the next init.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "bootstrap/unique_id.hpp"
#include "capi/default_instance.hpp"
#include "common/log.hpp"
#include "shmemx.h"

namespace symmem::capi {
namespace {

std::map<uint64_t, Runtime::Impl*> g_instances;
uint64_t g_current = 0;
bool g_in_init = false;  // shmemx_init_status during a constructor: the heap may exist

struct TlsSetting {
  std::string mode;  // "" = SYMMEM_STORE_TLS
  StoreSecurity paths;
};
TlsSetting g_tls;

int code_of(Errc c) {
  switch (c) {
    case Errc::kOk: return SHMEMX_SUCCESS;
    case Errc::kInvalidArgument: return SHMEMX_INVALID_PARAM;
    case Errc::kTimeout: return SHMEMX_TIMEOUT_ERROR;
    case Errc::kRefused:
    case Errc::kMismatch:
    case Errc::kIo: return SHMEMX_BOOTSTRAP_ERROR;
    case Errc::kNoMemory: return SHMEMX_MALLOC_FAILED;
    case Errc::kState: return SHMEMX_INVALID_VALUE;
    case Errc::kInternal: return SHMEMX_INNER_ERROR;
  }
  return SHMEMX_INNER_ERROR;
}

void select(uint64_t id) {
  auto it = g_instances.find(id);
  g_current = id;
  g_default = it == g_instances.end() ? nullptr : it->second;
  if (g_default) set_log_pe(g_default->rank_);
}

// Builds the C++ attributes of a C call; false (after a log line) on a bad argument.
bool to_attr(shmemx_bootstrap_t flags, const shmemx_init_attr_t* a, InitAttr* out) {
  InitAttr& r = *out;
  switch (flags) {
    case SHMEMX_INIT_WITH_DEFAULT: r.mode = InitMode::kDefault; break;
    case SHMEMX_INIT_WITH_UNIQUEID: r.mode = InitMode::kUniqueId; break;
    case SHMEMX_INIT_WITH_MPI: r.mode = InitMode::kMpi; break;
    default:
      log(LogLevel::kError, "shmemx_init_attr: flags 0x%x are not one of SHMEMX_INIT_WITH_DEFAULT, _MPI, _UNIQUEID",
          static_cast<unsigned>(flags));
      return false;
  }
  r.tls = g_tls.mode;
  r.tls_ca_file = g_tls.paths.ca_file;
  r.tls_ca_path = g_tls.paths.ca_path;
  r.tls_cert = g_tls.paths.cert_file;
  r.tls_key = g_tls.paths.key_file;
  r.tls_crl = g_tls.paths.crl_file;
  if (!a) {
    if (r.mode == InitMode::kUniqueId) {
      log(LogLevel::kError, "shmemx_init_attr: SHMEMX_INIT_WITH_UNIQUEID needs attributes with comm_args = the id");
      return false;
    }
    return true;
  }
  if (a->n_pes > 0) {
    r.my_pe = a->my_pe;
    r.n_pes = a->n_pes;
  }
  size_t len = strnlen(a->ip_port, SHMEMX_MAX_IP_PORT_LEN);
  if (len == SHMEMX_MAX_IP_PORT_LEN) {
    log(LogLevel::kError, "shmemx_init_attr: ip_port is not NUL-terminated within %d bytes", SHMEMX_MAX_IP_PORT_LEN);
    return false;
  }
  r.store_url.assign(a->ip_port, len);
  r.heap_size = a->local_mem_size;
  r.init_timeout_s = a->option_attr.init_timeout;
  r.op_timeout_s = a->option_attr.control_operation_timeout;
  switch (a->option_attr.transport) {
    case SHMEMX_TRANSPORT_AUTO: break;
    case SHMEMX_TRANSPORT_SHM: r.transport = "shm"; break;
    case SHMEMX_TRANSPORT_UCX: r.transport = "ucx"; break;
    default:
      log(LogLevel::kError, "shmemx_init_attr: unknown transport %d", a->option_attr.transport);
      return false;
  }
  r.instance_id = a->instance_id;
  if (r.mode == InitMode::kUniqueId) {
    if (!a->comm_args) {
      log(LogLevel::kError, "shmemx_init_attr: SHMEMX_INIT_WITH_UNIQUEID with comm_args = NULL (the id is missing)");
      return false;
    }
    std::memcpy(r.uid.bytes.data(), a->comm_args, UniqueId::kSize);
  } else if (r.mode == InitMode::kMpi) {
    r.mpi_comm = a->comm_args;
  }
  return true;
}

int init_instance(const InitAttr& attr, const char* call) {
  if (g_instances.count(attr.instance_id)) {  // repeated init: allowed, nothing to do
    select(attr.instance_id);
    return SHMEMX_SUCCESS;
  }
  g_in_init = true;
  Runtime::Impl* r = nullptr;
  try {
    // Errors come back here as exceptions, so that the call can return a code; once up,
    // the instance reports bad arguments the OpenSHMEM way (one line, end of the job).
    r = new Runtime::Impl(attr, ErrorMode::kThrow);
    r->mode_ = ErrorMode::kExitJob;
  } catch (const Error& e) {
    g_in_init = false;
    log(LogLevel::kError, "%s: %s", call, e.what());
    return code_of(e.code());
  } catch (const std::exception& e) {
    g_in_init = false;
    log(LogLevel::kError, "%s: %s", call, e.what());
    return SHMEMX_INNER_ERROR;
  }
  g_in_init = false;
  g_instances[attr.instance_id] = r;
  g_finalized = false;
  select(attr.instance_id);
  return SHMEMX_SUCCESS;
}

int finalize_instance(uint64_t id) {
  auto it = g_instances.find(id);
  if (it == g_instances.end()) return SHMEMX_NOT_INITED;
  Runtime::Impl* r = it->second;
  r->dfx_.finalize();  // the tools' collective finalize, while communication works
  r->barrier_all();
  r->finalized_ = true;
  g_instances.erase(it);
  delete r;
  if (g_current == id || !g_default) {
    if (g_instances.count(0)) select(0);
    else if (!g_instances.empty()) select(g_instances.begin()->first);
    else select(0);
  }
  if (g_instances.empty()) g_finalized = true;
  return SHMEMX_SUCCESS;
}

}  // namespace
}  // namespace symmem::capi

using namespace symmem;

extern "C" {

void shmem_init(void) {
  InitAttr a;
  capi::to_attr(SHMEMX_INIT_WITH_DEFAULT, nullptr, &a);
  // The standard's shmem_init cannot return an error: end the job with the message.
  if (capi::init_instance(a, "shmem_init") != SHMEMX_SUCCESS) {
    std::fflush(nullptr);
    _exit(1);
  }
}

void shmem_finalize(void) {
  capi::rt("shmem_finalize");  // reports a finalize without init
  capi::finalize_instance(capi::g_current);
}

// Deprecated: shmem_init with implicit finalization. The atexit handler finalizes the
// default instance if the program left it up (collective, like shmem_finalize: every PE
// reaches it by returning from main or calling exit).
void start_pes(int npes) {
  (void)npes;
  static bool registered = false;
  if (capi::g_instances.count(0)) return;  // "calling start_pes more than once has no effect"
  shmem_init();
  if (!registered) {
    registered = true;
    std::atexit([] {
      if (capi::g_instances.count(0)) capi::finalize_instance(0);
    });
  }
}

int shmemx_init_attr(shmemx_bootstrap_t flags, shmemx_init_attr_t* attr) {
  InitAttr a;
  if (!capi::to_attr(flags, attr, &a)) return SHMEMX_INVALID_PARAM;
  return capi::init_instance(a, "shmemx_init_attr");
}

int shmemx_get_uniqueid(shmemx_uniqueid_t* uid) {
  if (!uid) return SHMEMX_INVALID_PARAM;
  try {
    UniqueId id = UniqueId::create(capi::g_tls.mode);
    std::memcpy(uid, id.bytes.data(), sizeof(*uid));
    return SHMEMX_SUCCESS;
  } catch (const Error& e) {
    log(LogLevel::kError, "shmemx_get_uniqueid: %s", e.what());
    return capi::code_of(e.code());
  }
}

int shmemx_set_attr_uniqueid_args(int my_pe, int n_pes, int64_t local_mem_size, shmemx_uniqueid_t* uid,
                                  shmemx_init_attr_t* attr) {
  if (!uid || !attr || n_pes < 1 || my_pe < 0 || my_pe >= n_pes || local_mem_size < 0) {
    log(LogLevel::kError, "shmemx_set_attr_uniqueid_args: bad arguments (my_pe %d, n_pes %d, size %lld, uid %p, "
        "attr %p)", my_pe, n_pes, static_cast<long long>(local_mem_size), static_cast<void*>(uid),
        static_cast<void*>(attr));
    return SHMEMX_INVALID_PARAM;
  }
  *attr = shmemx_init_attr_t SHMEMX_INIT_ATTR_INITIALIZER;
  attr->my_pe = my_pe;
  attr->n_pes = n_pes;
  attr->local_mem_size = static_cast<uint64_t>(local_mem_size);
  attr->comm_args = uid;
  return SHMEMX_SUCCESS;
}

int shmemx_uniqueid_to_string(const shmemx_uniqueid_t* uid, char* text, size_t len) {
  if (!uid || !text) return SHMEMX_INVALID_PARAM;
  std::string t = unique_id_to_text(reinterpret_cast<const uint8_t*>(uid));
  if (len < t.size() + 1) return SHMEMX_INVALID_PARAM;
  std::memcpy(text, t.c_str(), t.size() + 1);
  return SHMEMX_SUCCESS;
}

int shmemx_uniqueid_from_string(const char* text, shmemx_uniqueid_t* uid) {
  if (!text || !uid) return SHMEMX_INVALID_PARAM;
  try {
    UniqueId id = UniqueId::from_string(text);
    std::memcpy(uid, id.bytes.data(), sizeof(*uid));
    return SHMEMX_SUCCESS;
  } catch (const Error& e) {
    log(LogLevel::kError, "shmemx_uniqueid_from_string: %s", e.what());
    return SHMEMX_INVALID_PARAM;
  }
}

int shmemx_set_conf_store_tls(bool enable, const char* tls_info, uint32_t tls_info_len) {
  if (!enable) {
    capi::g_tls = {"off", {}};
    return SHMEMX_SUCCESS;
  }
  std::string info = tls_info ? std::string(tls_info, strnlen(tls_info, tls_info_len)) : "";
  StoreSecurity paths;
  if (Status s = paths.parse_tls_info(info); !s.ok()) {
    log(LogLevel::kError, "shmemx_set_conf_store_tls: %s", s.message().c_str());
    return SHMEMX_INVALID_PARAM;
  }
  bool certs = !paths.cert_file.empty() || !paths.ca_file.empty() || !paths.ca_path.empty();
  capi::g_tls = {certs ? "cert" : "psk", paths};
  return SHMEMX_SUCCESS;
}

int shmemx_init_status(void) {
  if (capi::g_in_init) return SHMEMX_STATUS_SHM_CREATED;
  return capi::g_default ? SHMEMX_STATUS_IS_INITIALIZED : SHMEMX_STATUS_NOT_INITIALIZED;
}

void shmem_query_initialized(int* initialized) {
  if (initialized) *initialized = capi::g_default != nullptr;
}

int shmem_query_finalized(int* finalized) {
  if (!finalized) return SHMEMX_INVALID_PARAM;
  *finalized = capi::g_finalized && capi::g_default == nullptr;
  return SHMEMX_SUCCESS;
}

int shmemx_instance_select(uint64_t instance_id) {
  if (!capi::g_instances.count(instance_id)) {
    log(LogLevel::kError, "shmemx_instance_select: instance %llu is not initialized",
        static_cast<unsigned long long>(instance_id));
    return SHMEMX_NOT_INITED;
  }
  capi::select(instance_id);
  return SHMEMX_SUCCESS;
}

uint64_t shmemx_instance_current(void) { return capi::g_current; }

int shmemx_instance_finalize(uint64_t instance_id) { return capi::finalize_instance(instance_id); }

}  // extern "C"
