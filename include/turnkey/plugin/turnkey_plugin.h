/* turnkey runtime plugin ABI, version 1 (docs/plugins.md).
 *
 * A plugin is a shared library that exports one C function,
 *
 *     const turnkey_plugin* turnkey_plugin_entry(void);
 *
 * returning a pointer to a static description of one runtime. turnkey loads plugins from the
 * folders and files in TURNKEY_PLUGIN_PATH (colon-separated) and from the `plugins` folder next
 * to its binary (<build>/plugins, or <prefix>/lib/turnkey/plugins for an installation), once per
 * process, and registers each runtime under its `name` beside the built-in ones.
 *
 * Rules of the ABI:
 * - Plain C. Nothing may unwind across it: a C++ plugin catches every exception itself and
 *   reports it as an error string.
 * - `abi_version` is the first member in every version of the struct; turnkey reads it first
 *   and refuses a plugin built for another version (with both numbers in the message).
 * - Strings turnkey passes in are valid only during the call. Strings a plugin returns
 *   (name, display_name, devices, version()) must stay valid while the library is loaded
 *   (turnkey never unloads plugins).
 * - Errors are written as one line, NUL-terminated, into the caller's buffer `error` of
 *   `error_size` bytes (truncate when longer).
 * - Sessions are used from one thread at a time; different sessions may be used concurrently.
 */
#ifndef TURNKEY_PLUGIN_TURNKEY_PLUGIN_H_
#define TURNKEY_PLUGIN_TURNKEY_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TURNKEY_PLUGIN_ABI_VERSION 1u
#define TURNKEY_PLUGIN_ENTRY_SYMBOL "turnkey_plugin_entry"

#if defined(__GNUC__)
#define TURNKEY_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define TURNKEY_PLUGIN_EXPORT
#endif

/* Element types. Values are part of the ABI. */
typedef enum turnkey_dtype {
  TURNKEY_DTYPE_FLOAT32 = 1,
  TURNKEY_DTYPE_FLOAT16 = 2,
  TURNKEY_DTYPE_FLOAT64 = 3,
  TURNKEY_DTYPE_INT8 = 4,
  TURNKEY_DTYPE_UINT8 = 5,
  TURNKEY_DTYPE_INT16 = 6,
  TURNKEY_DTYPE_INT32 = 7,
  TURNKEY_DTYPE_INT64 = 8,
  TURNKEY_DTYPE_BOOL = 9
} turnkey_dtype;

/* A dense row-major tensor. For inputs, everything is owned by turnkey and valid only during
 * load() (copy what you keep). For outputs, everything is owned by the plugin and valid until
 * the next run() or destroy() of that session. */
typedef struct turnkey_tensor {
  const char* name; /* the ONNX graph input/output name */
  int32_t dtype;    /* a turnkey_dtype */
  int32_t rank;
  const int64_t* shape; /* rank entries */
  const void* data;
  uint64_t size_bytes; /* element count * element size */
} turnkey_tensor;

/* One `--rt-args key=value`. */
typedef struct turnkey_option {
  const char* key;
  const char* value;
} turnkey_option;

/* What turnkey asks a runtime to load. */
typedef struct turnkey_load_request {
  const char* onnx_path;        /* the ONNX model to run */
  const char* device;           /* one of the plugin's devices, e.g. "x86" */
  int32_t threads;              /* intra-op threads; 0 = the runtime's choice */
  const turnkey_tensor* inputs; /* one per graph input, in graph order, named */
  size_t input_count;
  const turnkey_option* options; /* --rt-args, in the order given */
  size_t option_count;
} turnkey_load_request;

typedef struct turnkey_session turnkey_session; /* the plugin's own type */

typedef struct turnkey_plugin {
  uint32_t abi_version;       /* TURNKEY_PLUGIN_ABI_VERSION the plugin was built with: FIRST */
  uint32_t struct_size;       /* sizeof(turnkey_plugin) the plugin was built with */
  const char* name;           /* CLI name: [a-z0-9._-]+, e.g. "opencv-dnn" */
  const char* display_name;   /* "OpenCV DNN" */
  const char* const* devices; /* NULL-terminated, e.g. {"x86", NULL} */

  /* Version of the wrapped runtime, e.g. "4.6.0". */
  const char* (*version)(void);
  /* 1 when the runtime can run here; else 0 with the reason in `reason`. */
  int (*probe)(char* reason, size_t reason_size);
  /* A loaded model with its inputs bound, or NULL with the reason in `error`. */
  turnkey_session* (*load)(const turnkey_load_request* request, char* error, size_t error_size);
  /* One inference on the bound inputs: this is what turnkey times. 0 = success; else the
   * reason in `error`. */
  int (*run)(turnkey_session* session, char* error, size_t error_size);
  /* Optional (NULL when not provided): outputs of the last run, for correctness checks. */
  size_t (*output_count)(turnkey_session* session);
  int (*output)(turnkey_session* session, size_t index, turnkey_tensor* out);
  /* Frees the session. */
  void (*destroy)(turnkey_session* session);
} turnkey_plugin;

typedef const turnkey_plugin* (*turnkey_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* TURNKEY_PLUGIN_TURNKEY_PLUGIN_H_ */
