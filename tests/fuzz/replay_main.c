/*
 * A main for the fuzz harnesses without libFuzzer: replays files through
 * LLVMFuzzerTestOneInput, so the seeds and every regression input run in the
 * normal test suite (any compiler, valgrind, sanitizers).
 *
 *   fuzz-replay-<name> [--times] [--builtin [--heavy]] [--seeds PATH...] [--raw PATH...]
 *   fuzz-replay-<name> --write-corpus DIR [same arguments]
 *
 * PATH is a file or a directory (read recursively, in name order, dot files
 * skipped). Files after --seeds are seed files: each is replayed in every
 * variant the harness makes of it (fuzz_seed_variant, e.g. behind each
 * selector byte). Files after --raw (the default) are inputs exactly as
 * libFuzzer saw them: tests/fuzz/regress/<name>/, crash files. --builtin
 * adds the harness's built-in seeds, --heavy those of them that take
 * seconds under valgrind too (--write-corpus has them, but for those too
 * large for a corpus). --write-corpus writes every input into
 * DIR (created if needed) instead of running it: run-fuzz.sh builds
 * libFuzzer's starting corpus with it. --times prints how long each input
 * took (to keep the seeds cheap under valgrind).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "fuzz.h"

typedef struct run {
	const char *corpus_dir; /* --write-corpus */
	int times;              /* --times */
	size_t inputs;
	size_t files;
	size_t written;
	double slowest_s;
	char slowest[512];
} run;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int feed(run *r, const uint8_t *data, size_t len, const char *name)
{
	if (r->corpus_dir) {
		char path[4096];
		FILE *f;
		snprintf(path, sizeof(path), "%s/input-%06zu", r->corpus_dir, r->written++);
		f = fopen(path, "wb");
		if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
			fprintf(stderr, "fuzz-replay: cannot write %s: %s\n", path, strerror(errno));
			return -1;
		}
	} else {
		/* A private copy: an input read out of bounds is caught by the
		 * sanitizers or valgrind, not hidden by the buffer's slack. */
		uint8_t *copy = malloc(len ? len : 1);
		double t0 = now_s(), dt;
		if (!copy) {
			fprintf(stderr, "fuzz-replay: out of memory\n");
			return -1;
		}
		if (len)
			memcpy(copy, data, len);
		fuzz_input_name = name;
		LLVMFuzzerTestOneInput(copy, len);
		fuzz_input_name = NULL;
		free(copy);
		dt = now_s() - t0;
		if (r->times)
			printf("%8.3f s  %s\n", dt, name);
		if (dt > r->slowest_s) {
			r->slowest_s = dt;
			snprintf(r->slowest, sizeof(r->slowest), "%s", name);
		}
	}
	r->inputs++;
	return 0;
}

static int read_all(const char *path, fuzz_bytes *out)
{
	FILE *f = fopen(path, "rb");
	uint8_t chunk[65536];
	size_t n;
	int ok;
	fuzz_bytes_reset(out);
	if (!f) {
		fprintf(stderr, "fuzz-replay: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fuzz_bytes_add(out, chunk, n);
	ok = !ferror(f);
	fclose(f);
	if (!ok) {
		fprintf(stderr, "fuzz-replay: cannot read %s\n", path);
		return -1;
	}
	return 0;
}

static int one_file(run *r, const char *path, int seed)
{
	fuzz_bytes file = { NULL, 0, 0 }, v = { NULL, 0, 0 };
	char name[600];
	size_t i;
	int rc = read_all(path, &file);

	r->files++;
	if (rc == 0 && !seed) {
		rc = feed(r, file.data ? file.data : (const uint8_t *)"", file.len, path);
	} else if (rc == 0) {
		for (i = 0; rc == 0 && fuzz_seed_variant(i, file.data ? file.data : (const uint8_t *)"",
							  file.len, &v);
		     i++) {
			snprintf(name, sizeof(name), "%s (variant %zu)", path, i);
			rc = feed(r, v.data ? v.data : (const uint8_t *)"", v.len, name);
		}
	}
	fuzz_bytes_free(&file);
	fuzz_bytes_free(&v);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk(run *r, const char *path, int seed)
{
	struct stat st;
	struct dirent *e;
	DIR *d;
	char **names = NULL, sub[4096];
	size_t n = 0, cap = 0, i;
	int rc = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "fuzz-replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return one_file(r, path, seed);
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "fuzz-replay: cannot list %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **p;
			cap = cap ? cap * 2 : 64;
			p = realloc(names, cap * sizeof(*names));
			if (!p) {
				rc = -1;
				break;
			}
			names = p;
		}
		names[n] = strdup(e->d_name);
		if (!names[n]) {
			rc = -1;
			break;
		}
		n++;
	}
	closedir(d);
	if (rc == 0 && n > 1)
		qsort(names, n, sizeof(*names), cmp_names);
	for (i = 0; i < n; i++) {
		if (rc == 0) {
			snprintf(sub, sizeof(sub), "%s/%s", path, names[i]);
			rc = walk(r, sub, seed);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

static int builtins(run *r)
{
	fuzz_bytes v = { NULL, 0, 0 };
	char name[64];
	size_t i;
	int rc = 0, made;
	for (i = 0; rc == 0 && (made = fuzz_builtin_seed(i, &v)) != 0; i++) {
		if (made < 0)
			continue; /* heavy, not wanted */
		snprintf(name, sizeof(name), "built-in seed %zu", i);
		rc = feed(r, v.data ? v.data : (const uint8_t *)"", v.len, name);
	}
	fuzz_bytes_free(&v);
	return rc;
}

int main(int argc, char **argv)
{
	run r;
	int i, seed = 0, want_builtin = 0, rc = 0;
	double t0 = now_s();

	memset(&r, 0, sizeof(r));
	fuzz_verbose = getenv("FUZZ_VERBOSE") && *getenv("FUZZ_VERBOSE") == '1';
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--write-corpus") && i + 1 < argc) {
			r.corpus_dir = argv[++i];
			if (mkdir(r.corpus_dir, 0777) != 0 && errno != EEXIST) {
				fprintf(stderr, "fuzz-replay: cannot create %s: %s\n", r.corpus_dir,
					strerror(errno));
				return 2;
			}
		} else if (!strcmp(argv[i], "--builtin")) {
			want_builtin = 1;
		} else if (!strcmp(argv[i], "--times")) {
			r.times = 1;
		} else if (!strcmp(argv[i], "--heavy")) {
			fuzz_heavy_seeds = 1;
		}
	}
	if (r.corpus_dir)
		fuzz_heavy_seeds = 2;
	if (!r.corpus_dir)
		LLVMFuzzerInitialize(&argc, &argv);
	if (want_builtin)
		rc = builtins(&r);
	for (i = 1; rc == 0 && i < argc; i++) {
		if (!strcmp(argv[i], "--write-corpus"))
			i++;
		else if (!strcmp(argv[i], "--builtin") || !strcmp(argv[i], "--times") ||
			 !strcmp(argv[i], "--heavy"))
			continue;
		else if (!strcmp(argv[i], "--seeds"))
			seed = 1;
		else if (!strcmp(argv[i], "--raw"))
			seed = 0;
		else if (!strncmp(argv[i], "--", 2)) {
			fprintf(stderr, "usage: %s [--write-corpus DIR] [--times] [--builtin [--heavy]] "
					"[--seeds PATH...] [--raw PATH...]\n", argv[0]);
			return 2;
		} else
			rc = walk(&r, argv[i], seed);
	}
	if (rc != 0)
		return 2;
	if (r.corpus_dir)
		printf("fuzz-replay: wrote %zu inputs from %zu files to %s\n", r.written, r.files,
		       r.corpus_dir);
	else
		printf("fuzz-replay: %zu inputs from %zu files passed in %.2f s (slowest %.3f s: %s)\n",
		       r.inputs, r.files, now_s() - t0, r.slowest_s, r.slowest[0] ? r.slowest : "-");
	return 0;
}
