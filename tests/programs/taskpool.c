/* A pthreads worker pool fed through a task queue (a ring under a mutex and a condition
 * variable), in rounds closed by a barrier; each task reads a block of a data file and
 * computes over it; after each round the main thread appends a line to a log and fsyncs.
 *
 *   taskpool THREADS ROUNDS TASKS WORK DATAFILE LOGFILE
 *
 * THREADS workers; each round the main thread queues TASKS tasks and THREADS end-of-round
 * markers (a worker taking a marker goes to the barrier, of THREADS + 1 parties: the
 * workers and the main thread).  A task reads 64 KiB at its own offset (pread) and hashes
 * it WORK times.  Prints the wall time of the rounds in seconds.  DATAFILE is made when
 * missing (4 MiB, the same bytes every time).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 65536
#define RING 4096
#define MARKER (-1L)

static long ring[RING];
static int head, tail;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nonempty = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t round_end;
static int data_fd, work;
static long blocks;
static uint64_t total;          /* the tasks' hashes, summed under the lock */

static void put(long task)
{
    pthread_mutex_lock(&lock);
    ring[tail++ % RING] = task;
    pthread_cond_signal(&nonempty);
    pthread_mutex_unlock(&lock);
}

static long get(void)
{
    pthread_mutex_lock(&lock);
    while (head == tail)
        pthread_cond_wait(&nonempty, &lock);
    long task = ring[head++ % RING];
    pthread_mutex_unlock(&lock);
    return task;
}

static uint64_t compute(const unsigned char *buf)
{
    uint64_t h = 1469598103934665603ULL;
    for (int r = 0; r < work; r++)
        for (int i = 0; i < BLOCK; i += 4)
            h = (h ^ buf[i]) * 1099511628211ULL;
    return h;
}

static void *worker(void *arg)
{
    unsigned char *buf = malloc(BLOCK);
    (void)arg;
    for (;;) {
        long task = get();
        if (task == MARKER) {
            pthread_barrier_wait(&round_end);
            continue;
        }
        if (task == -2L)
            break;
        if (pread(data_fd, buf, BLOCK, (task % blocks) * BLOCK) != BLOCK) {
            perror("pread");
            exit(1);
        }
        uint64_t h = compute(buf);
        pthread_mutex_lock(&lock);
        total += h;
        pthread_mutex_unlock(&lock);
    }
    free(buf);
    return 0;
}

/* The data file, when missing: 64 blocks of pseudo-random bytes (the same every time). */
static int make_data(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        return -1;
    unsigned char *buf = malloc(BLOCK);
    uint64_t x = 88172645463325252ULL;
    for (int b = 0; b < 64; b++) {
        for (int i = 0; i < BLOCK; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            buf[i] = (unsigned char)x;
        }
        if (write(fd, buf, BLOCK) != BLOCK)
            return close(fd), unlink(tmp), -1;
    }
    free(buf);
    fsync(fd);
    close(fd);
    return rename(tmp, path);
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: %s THREADS ROUNDS TASKS WORK DATAFILE LOGFILE\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]), rounds = atoi(argv[2]), tasks = atoi(argv[3]);
    work = atoi(argv[4]);
    if (threads < 1 || rounds < 1 || tasks < 1 || work < 1 || tasks + threads >= RING) {
        fprintf(stderr, "%s: bad arguments\n", argv[0]);
        return 2;
    }
    data_fd = open(argv[5], O_RDONLY);
    if (data_fd < 0 && make_data(argv[5]) == 0)
        data_fd = open(argv[5], O_RDONLY);
    if (data_fd < 0 || (blocks = lseek(data_fd, 0, SEEK_END) / BLOCK) < 1) {
        perror(argv[5]);
        return 1;
    }
    int log_fd = open(argv[6], O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log_fd < 0) {
        perror(argv[6]);
        return 1;
    }
    pthread_barrier_init(&round_end, 0, threads + 1);
    pthread_t *t = calloc(threads, sizeof *t);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], 0, worker, 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < tasks; i++)
            put((long)r * tasks + i);
        for (int i = 0; i < threads; i++)
            put(MARKER);
        pthread_barrier_wait(&round_end);
        char line[64];
        pthread_mutex_lock(&lock);
        int n = snprintf(line, sizeof line, "round %d %016llx\n", r, (unsigned long long)total);
        pthread_mutex_unlock(&lock);
        if (write(log_fd, line, n) != n || fsync(log_fd) != 0) {
            perror(argv[6]);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int i = 0; i < threads; i++)
        put(-2L);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], 0);
    printf("%.6f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
