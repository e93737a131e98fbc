/* Rounds of fork and join: each round the main thread starts THREADS threads, each hashes
 * an equal share of WORK blocks (a static split: thread k takes blocks k, k + THREADS,
 * ...), joins them, then merges the partial results and appends a line to a log (a short
 * serial part).  No locks, no queue: the threads only compute.
 *
 *   forkjoin THREADS ROUNDS WORK LOGFILE
 *
 * Prints the wall time of the rounds in seconds.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 16384
#define BLOCKS 48

static unsigned char data[BLOCK];
static int threads, work;
static uint64_t partial[64];

static void *share(void *arg)
{
    long k = (long)arg;
    uint64_t h = 1469598103934665603ULL + (uint64_t)k;
    for (int b = (int)k; b < BLOCKS; b += threads)
        for (int r = 0; r < work; r++)
            for (int i = 0; i < BLOCK; i += 2)
                h = (h ^ data[i] ^ (unsigned)b) * 1099511628211ULL;
    partial[k] = h;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s THREADS ROUNDS WORK LOGFILE\n", argv[0]);
        return 2;
    }
    threads = atoi(argv[1]);
    int rounds = atoi(argv[2]);
    work = atoi(argv[3]);
    if (threads < 1 || threads > 64 || rounds < 1 || work < 1) {
        fprintf(stderr, "%s: bad arguments\n", argv[0]);
        return 2;
    }
    int log_fd = open(argv[4], O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log_fd < 0) {
        perror(argv[4]);
        return 1;
    }
    for (int i = 0; i < BLOCK; i++)
        data[i] = (unsigned char)(i * 2654435761u >> 13);
    pthread_t t[64];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t total = 0;
    for (int r = 0; r < rounds; r++) {
        for (long k = 0; k < threads; k++)
            pthread_create(&t[k], 0, share, (void *)k);
        for (int k = 0; k < threads; k++)
            pthread_join(t[k], 0);
        for (int k = 0; k < threads; k++)          /* the serial merge */
            for (int i = 0; i < 20000; i++)
                total = (total ^ partial[k] ^ (uint64_t)i) * 1099511628211ULL;
        char line[64];
        int n = snprintf(line, sizeof line, "round %d %016llx\n", r, (unsigned long long)total);
        if (write(log_fd, line, n) != n) {
            perror(argv[4]);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.6f\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
