/* A runtime plugin for tests of the plugin host, in plain C (as the ABI promises). It does not
 * read the model: run() copies the bound inputs to its outputs, so tests can check what turnkey
 * handed over. Built several times with different definitions:
 *   TEST_PLUGIN_NAME  runtime name (default "test-plugin")
 *   TEST_PLUGIN_ABI   ABI version it claims (default TURNKEY_PLUGIN_ABI_VERSION)
 * Runtime arguments: fail_at=load|run makes that step fail with "test-plugin refuses to <step>";
 * drift=1 adds 1 to every float32 output at each run (a runtime whose outputs change from call to
 * call, as a race between threads makes them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "turnkey/plugin/turnkey_plugin.h"

#ifndef TEST_PLUGIN_NAME
#define TEST_PLUGIN_NAME "test-plugin"
#endif
#ifndef TEST_PLUGIN_ABI
#define TEST_PLUGIN_ABI TURNKEY_PLUGIN_ABI_VERSION
#endif

struct turnkey_session {
  size_t count;
  turnkey_tensor* tensors; /* copies of the inputs, served as outputs */
  char** names;
  int64_t** shapes;
  void** data;
  int fail_run;
  int drift;
  long runs;
};

static const char* test_version(void) { return "1.0-test"; }

static int test_probe(char* reason, size_t size) {
  const char* off = getenv("TEST_PLUGIN_UNAVAILABLE");
  if (off && *off) {
    snprintf(reason, size, "TEST_PLUGIN_UNAVAILABLE is set");
    return 0;
  }
  return 1;
}

static void test_destroy(turnkey_session* s) {
  for (size_t i = 0; i < s->count; ++i) {
    free(s->names[i]);
    free(s->shapes[i]);
    free(s->data[i]);
  }
  free(s->names);
  free(s->shapes);
  free(s->data);
  free(s->tensors);
  free(s);
}

static turnkey_session* test_load(const turnkey_load_request* r, char* error, size_t size) {
  int fail_run = 0, drift = 0;
  for (size_t i = 0; i < r->option_count; ++i) {
    if (strcmp(r->options[i].key, "drift") == 0) {
      drift = strcmp(r->options[i].value, "1") == 0;
      continue;
    }
    if (strcmp(r->options[i].key, "fail_at") != 0) {
      snprintf(error, size, "unknown runtime argument '%s'", r->options[i].key);
      return NULL;
    }
    if (strcmp(r->options[i].value, "load") == 0) {
      snprintf(error, size, "%s refuses to load %s", TEST_PLUGIN_NAME, r->onnx_path);
      return NULL;
    }
    fail_run = strcmp(r->options[i].value, "run") == 0;
  }
  turnkey_session* s = calloc(1, sizeof *s);
  s->count = r->input_count;
  s->fail_run = fail_run;
  s->drift = drift;
  s->tensors = calloc(s->count ? s->count : 1, sizeof *s->tensors);
  s->names = calloc(s->count ? s->count : 1, sizeof *s->names);
  s->shapes = calloc(s->count ? s->count : 1, sizeof *s->shapes);
  s->data = calloc(s->count ? s->count : 1, sizeof *s->data);
  for (size_t i = 0; i < s->count; ++i) {
    const turnkey_tensor* in = &r->inputs[i];
    s->names[i] = strdup(in->name);
    s->shapes[i] = malloc(sizeof(int64_t) * (in->rank ? in->rank : 1));
    memcpy(s->shapes[i], in->shape, sizeof(int64_t) * in->rank);
    s->data[i] = malloc(in->size_bytes ? in->size_bytes : 1);
    memcpy(s->data[i], in->data, in->size_bytes);
    s->tensors[i] = *in;
    s->tensors[i].name = s->names[i];
    s->tensors[i].shape = s->shapes[i];
    s->tensors[i].data = s->data[i];
  }
  return s;
}

static int test_run(turnkey_session* s, char* error, size_t size) {
  if (s->fail_run) {
    snprintf(error, size, "%s refuses to run", TEST_PLUGIN_NAME);
    return 1;
  }
  ++s->runs;
  for (size_t i = 0; s->drift && i < s->count; ++i) {
    if (s->tensors[i].dtype != TURNKEY_DTYPE_FLOAT32) continue;
    float* values = s->data[i];
    for (uint64_t j = 0; j < s->tensors[i].size_bytes / sizeof(float); ++j) values[j] += 1.0f;
  }
  return 0;
}

static size_t test_output_count(turnkey_session* s) { return s->count; }

static int test_output(turnkey_session* s, size_t index, turnkey_tensor* out) {
  if (index >= s->count) return 1;
  *out = s->tensors[index];
  return 0;
}

static const char* const devices[] = {"x86", NULL};

static const turnkey_plugin plugin = {
    TEST_PLUGIN_ABI, sizeof(turnkey_plugin), TEST_PLUGIN_NAME, "Test plugin (copies inputs)",
    devices,         test_version,           test_probe,       test_load,
    test_run,        test_output_count,      test_output,      test_destroy,
};

TURNKEY_PLUGIN_EXPORT const turnkey_plugin* turnkey_plugin_entry(void) { return &plugin; }
