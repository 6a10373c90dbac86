// A GPU backend that loads and gives no device, as ggml's CUDA backend does
// on a machine without a GPU: ggml_backend_init logs ggml_cuda_init's error
// through its libggml-base.so and returns a registry of zero devices
// (ggml-backend-impl.h's layout, GGML_BACKEND_API_VERSION 2).
#include <stddef.h>

void fake_log_error(const char *text);

struct reg;
struct reg_i {
	const char *(*get_name)(struct reg *);
	size_t (*get_device_count)(struct reg *);
	void *(*get_device)(struct reg *, size_t);
	void *(*get_proc_address)(struct reg *, const char *);
};
struct reg {
	int api_version;
	struct reg_i iface;
	void *context;
};

static const char *name(struct reg *r) { (void)r; return "CUDA"; }
static size_t count(struct reg *r) { (void)r; return 0; }
static void *device(struct reg *r, size_t i) { (void)r; (void)i; return NULL; }
static void *proc(struct reg *r, const char *n) { (void)r; (void)n; return NULL; }

static struct reg the_reg = {2, {name, count, device, proc}, NULL};

struct reg *ggml_backend_init(void) {
	fake_log_error("ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected\n");
	return &the_reg;
}
