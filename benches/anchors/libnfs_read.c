/*
 * libnfs_read: the anchor of `cargo xtask bench`'s NFS rows. Reads every regular file of one
 * directory of an NFSv3 export, fully, through libnfs's async API on one connection, with a fixed
 * number of READs of a fixed size in flight, and prints one JSON line:
 *
 *   {"bytes":..,"wall_s":..,"user_s":..,"sys_s":..,"n_reads":..,"n_files":..,"fingerprint":"..."}
 *
 * usage: libnfs_read NFS_URL DIR READ_SIZE IN_FLIGHT
 *   NFS_URL    the export, e.g. nfs://127.0.0.1/srv/export?nfsport=2049&mountport=20048
 *              (libnfs asks the portmapper for the ports the URL does not give)
 *   DIR        the directory inside the export, e.g. /seq
 *   READ_SIZE  bytes per READ (at most the server's rtmax: libnfs would split a larger one)
 *   IN_FLIGHT  READs kept in flight
 *
 * The clock and getrusage(RUSAGE_SELF) are read after the mount and at the end, so the figures
 * cover the listing, the opens and the reads. The files are read in name order, each from start
 * to end, the next READ going out as soon as one comes back: the same job as benches/nfs_read.rs.
 *
 * Each reply is copied out of libnfs's receive buffer into the slot's own buffer, as any program
 * that keeps the data must (the pointer libnfs hands the callback is gone when it returns), and
 * playsim's client delivers into the caller's buffer too.
 *
 * The data is checked two ways: every READ must return the bytes asked for (a short one is
 * completed with a further READ, as playsim's client does), the total must be the sum of the
 * listed sizes, and the fingerprint, a sum over chunks that both programs and the xtask compute
 * the same way (see chunk_fingerprint), must match what the xtask computes from the local files.
 *
 * Build: gcc -O2 -Wall -o libnfs_read libnfs_read.c -lnfs
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw-nfs.h>

struct file {
	struct job *job;
	char *name;
	uint64_t size;
	struct nfsfh *fh;
};

/* One READ in flight: which file, where, how much, and where its bytes go. */
struct slot {
	struct job *job;
	size_t file_idx;
	uint64_t offset;
	/* The whole chunk: READ_SIZE bytes, or what is left of the file. */
	uint64_t len;
	/* Bytes of the chunk already in buf (a short READ is completed by another). */
	uint64_t done;
	unsigned char *buf;
};

struct job {
	struct nfs_context *nfs;
	const char *dir;
	struct file *files;
	size_t n_files;
	size_t cap_files;
	uint64_t read_size;
	/* The next chunk to hand out. */
	size_t next_file;
	uint64_t next_offset;
	size_t n_busy;
	/* Opens, closes or the mount still awaited. */
	size_t n_pending;
	uint64_t bytes;
	uint64_t n_reads;
	uint64_t fingerprint;
	/* The first error, which ends the run. */
	char *error;
};

static void fail(struct job *job, const char *what, const char *detail)
{
	if (job->error == NULL) {
		size_t n = strlen(what) + strlen(detail) + 3;
		job->error = malloc(n);
		snprintf(job->error, n, "%s: %s", what, detail);
	}
}

/* splitmix64's finaliser. */
static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static uint64_t le64(const unsigned char *p, uint64_t n)
{
	uint64_t v = 0;
	for (uint64_t i = 0; i < n && i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * The fingerprint of one chunk (READ_SIZE bytes at `offset` of the file_idx-th file in name
 * order, fewer at the end of a file): its first and last 8 bytes (little-endian, fewer for a
 * chunk under 8 bytes), mixed with where it lies. The run's fingerprint is the wrapping sum
 * over all chunks, so it does not depend on the order replies come back in.
 */
static uint64_t chunk_fingerprint(size_t file_idx, uint64_t offset, const unsigned char *data, uint64_t len)
{
	uint64_t tail = len < 8 ? len : 8;
	uint64_t first = le64(data, len);
	uint64_t last = le64(data + len - tail, tail);
	return mix64(first ^ offset ^ ((uint64_t)file_idx << 48)) ^ mix64(last + len);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* Services the connection until `*count` is 0 or an error is recorded. */
static int run_until_zero(struct job *job, size_t *count)
{
	while (*count > 0 && job->error == NULL) {
		struct pollfd pfd = {.fd = nfs_get_fd(job->nfs), .events = nfs_which_events(job->nfs)};
		if (poll(&pfd, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			fail(job, "poll", strerror(errno));
			break;
		}
		if (nfs_service(job->nfs, pfd.revents) < 0) {
			fail(job, "nfs_service", nfs_get_error(job->nfs));
			break;
		}
	}
	return job->error == NULL ? 0 : -1;
}

static void mount_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct job *job = private_data;
	(void)nfs;
	if (err < 0)
		fail(job, "mount", (const char *)data);
	job->n_pending--;
}

static void open_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct file *file = private_data;
	(void)nfs;
	if (err < 0)
		fail(file->job, file->name, (const char *)data);
	else
		file->fh = data;
	file->job->n_pending--;
}

static int compare_files(const void *a, const void *b)
{
	return strcmp(((const struct file *)a)->name, ((const struct file *)b)->name);
}

static void opendir_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct job *job = private_data;
	if (err < 0) {
		fail(job, job->dir, (const char *)data);
	} else {
		struct nfsdir *dir = data;
		struct nfsdirent *entry;
		while ((entry = nfs_readdir(nfs, dir)) != NULL) {
			if (entry->type != NF3REG)
				continue;
			if (job->n_files == job->cap_files) {
				job->cap_files = job->cap_files ? 2 * job->cap_files : 64;
				job->files = realloc(job->files, job->cap_files * sizeof(*job->files));
			}
			job->files[job->n_files++] = (struct file){.job = job, .name = strdup(entry->name), .size = entry->size};
		}
		nfs_closedir(nfs, dir);
		qsort(job->files, job->n_files, sizeof(*job->files), compare_files);
	}
	job->n_pending--;
}

static void read_cb(int err, struct nfs_context *nfs, void *data, void *private_data);

/* Sends the READ for the rest of the slot's chunk. */
static void send_read(struct slot *slot)
{
	struct job *job = slot->job;
	struct file *file = &job->files[slot->file_idx];
	if (nfs_pread_async(job->nfs, file->fh, slot->offset + slot->done, slot->len - slot->done, read_cb, slot) < 0) {
		fail(job, file->name, nfs_get_error(job->nfs));
		return;
	}
	job->n_reads++;
	job->n_busy++;
}

/* Gives the slot the next chunk and sends its READ; returns 0 when no chunk is left. */
static int start_chunk(struct slot *slot)
{
	struct job *job = slot->job;
	while (job->next_file < job->n_files && job->next_offset >= job->files[job->next_file].size) {
		job->next_file++;
		job->next_offset = 0;
	}
	if (job->next_file == job->n_files)
		return 0;
	uint64_t left = job->files[job->next_file].size - job->next_offset;
	slot->file_idx = job->next_file;
	slot->offset = job->next_offset;
	slot->len = left < job->read_size ? left : job->read_size;
	slot->done = 0;
	job->next_offset += slot->len;
	send_read(slot);
	return 1;
}

static void read_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct slot *slot = private_data;
	struct job *job = slot->job;
	struct file *file = &job->files[slot->file_idx];
	(void)nfs;
	job->n_busy--;
	if (err < 0) {
		fail(job, file->name, (const char *)data);
		return;
	}
	if (err == 0) {
		char detail[96];
		snprintf(detail, sizeof(detail), "read 0 bytes at offset %" PRIu64 " of %" PRIu64,
			 slot->offset + slot->done, file->size);
		fail(job, file->name, detail);
		return;
	}
	uint64_t n = (uint64_t)err;
	if (n > slot->len - slot->done)
		n = slot->len - slot->done;
	memcpy(slot->buf + slot->done, data, n);
	slot->done += n;
	job->bytes += n;
	if (slot->done < slot->len) {
		send_read(slot);
		return;
	}
	job->fingerprint += chunk_fingerprint(slot->file_idx, slot->offset, slot->buf, slot->len);
	start_chunk(slot);
}

static void close_cb(int err, struct nfs_context *nfs, void *data, void *private_data)
{
	struct job *job = private_data;
	(void)nfs;
	(void)data;
	(void)err;
	job->n_pending--;
}

static uint64_t parse_size(const char *text, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno != 0 || *end != '\0' || v == 0) {
		fprintf(stderr, "libnfs_read: %s `%s` is not a positive whole number\n", what, text);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: libnfs_read NFS_URL DIR READ_SIZE IN_FLIGHT\n"
				"  e.g. libnfs_read 'nfs://127.0.0.1/srv/export?nfsport=2049&mountport=20048' "
				"/seq 1048576 8\n");
		return 2;
	}
	struct job job = {.dir = argv[2]};
	job.read_size = parse_size(argv[3], "READ_SIZE");
	uint64_t in_flight = parse_size(argv[4], "IN_FLIGHT");

	job.nfs = nfs_init_context();
	if (job.nfs == NULL) {
		fprintf(stderr, "libnfs_read: cannot create an nfs context\n");
		return 1;
	}
	struct nfs_url *url = nfs_parse_url_dir(job.nfs, argv[1]);
	if (url == NULL) {
		fprintf(stderr, "libnfs_read: %s: %s\n", argv[1], nfs_get_error(job.nfs));
		return 1;
	}
	job.n_pending = 1;
	if (nfs_mount_async(job.nfs, url->server, url->path, mount_cb, &job) < 0)
		fail(&job, "mount", nfs_get_error(job.nfs));
	if (run_until_zero(&job, &job.n_pending) < 0) {
		fprintf(stderr, "libnfs_read: %s: %s\n", argv[1], job.error);
		return 1;
	}
	uint64_t readmax = nfs_get_readmax(job.nfs);
	if (job.read_size > readmax) {
		fprintf(stderr, "libnfs_read: READ_SIZE %" PRIu64 " is over the server's largest READ, %" PRIu64 "\n",
			job.read_size, readmax);
		return 1;
	}

	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	double t0 = now_s();

	job.n_pending = 1;
	if (nfs_opendir_async(job.nfs, job.dir, opendir_cb, &job) < 0)
		fail(&job, job.dir, nfs_get_error(job.nfs));
	run_until_zero(&job, &job.n_pending);

	/* Open every file at once: each open is a LOOKUP and small next to the reads. */
	char *path = NULL;
	for (size_t i = 0; i < job.n_files && job.error == NULL; i++) {
		size_t n = strlen(job.dir) + strlen(job.files[i].name) + 2;
		path = realloc(path, n);
		snprintf(path, n, "%s/%s", job.dir, job.files[i].name);
		if (nfs_open_async(job.nfs, path, 0 /* O_RDONLY */, open_cb, &job.files[i]) < 0)
			fail(&job, path, nfs_get_error(job.nfs));
		else
			job.n_pending++;
	}
	run_until_zero(&job, &job.n_pending);

	uint64_t expected = 0;
	for (size_t i = 0; i < job.n_files; i++)
		expected += job.files[i].size;
	struct slot *slots = calloc(in_flight, sizeof(*slots));
	for (uint64_t i = 0; i < in_flight && job.error == NULL; i++) {
		slots[i].job = &job;
		slots[i].buf = malloc(job.read_size);
		if (slots[i].buf == NULL) {
			fail(&job, "malloc", "out of memory");
			break;
		}
		if (!start_chunk(&slots[i]))
			break;
	}
	run_until_zero(&job, &job.n_busy);

	for (size_t i = 0; i < job.n_files && job.error == NULL; i++) {
		if (job.files[i].fh == NULL)
			continue;
		if (nfs_close_async(job.nfs, job.files[i].fh, close_cb, &job) == 0)
			job.n_pending++;
	}
	run_until_zero(&job, &job.n_pending);

	double wall = now_s() - t0;
	getrusage(RUSAGE_SELF, &ru1);

	if (job.error != NULL) {
		fprintf(stderr, "libnfs_read: %s\n", job.error);
		return 1;
	}
	if (job.n_files == 0) {
		fprintf(stderr, "libnfs_read: %s holds no files\n", job.dir);
		return 1;
	}
	if (job.bytes != expected) {
		fprintf(stderr, "libnfs_read: read %" PRIu64 " bytes, but the %zu files hold %" PRIu64 "\n", job.bytes,
			job.n_files, expected);
		return 1;
	}
	printf("{\"bytes\":%" PRIu64 ",\"wall_s\":%.6f,\"user_s\":%.6f,\"sys_s\":%.6f,\"n_reads\":%" PRIu64
	       ",\"n_files\":%zu,\"fingerprint\":\"%016" PRIx64 "\"}\n",
	       job.bytes, wall, tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime), tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime),
	       job.n_reads, job.n_files, job.fingerprint);

	for (uint64_t i = 0; i < in_flight; i++)
		free(slots[i].buf);
	free(slots);
	for (size_t i = 0; i < job.n_files; i++)
		free(job.files[i].name);
	free(job.files);
	free(path);
	nfs_destroy_url(url);
	nfs_destroy_context(job.nfs);
	return 0;
}
