// A Java thread pool (Executors.newFixedThreadPool) running rounds of tasks: each task
// reads a 64 KiB block of a data file (RandomAccessFile), hashes it WORK times and adds
// the hash to a total in a synchronized block; the main thread submits a round's TASKS
// tasks and waits for them all (invokeAll) before the next round.
//
//   java TaskPool.java THREADS ROUNDS TASKS WORK DATAFILE
//
// Two rounds warm the JIT first and are not timed.  Prints the wall time of the timed
// rounds in seconds.  DATAFILE is made when missing (4 MiB, the same bytes every time).
import java.io.*;
import java.util.*;
import java.util.concurrent.*;

public class TaskPool {
    static final int BLOCK = 65536;
    static final Object lock = new Object();
    static long total;

    static long task(String data, int i, int work) throws IOException {
        byte[] buf = new byte[BLOCK];
        try (RandomAccessFile f = new RandomAccessFile(data, "r")) {
            f.seek((long) (i % 64) * BLOCK);
            f.readFully(buf);
        }
        long h = 1469598103934665603L;
        for (int r = 0; r < work; r++)
            for (int k = 0; k < BLOCK; k += 4)
                h = (h ^ buf[k]) * 1099511628211L;
        synchronized (lock) {
            total += h;
        }
        return h;
    }

    static void makeData(String path) throws IOException {
        File f = new File(path);
        if (f.exists())
            return;
        File tmp = new File(path + ".tmp");
        long x = 88172645463325252L;
        try (FileOutputStream out = new FileOutputStream(tmp)) {
            byte[] buf = new byte[BLOCK];
            for (int b = 0; b < 64; b++) {
                for (int i = 0; i < BLOCK; i++) {
                    x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
                    buf[i] = (byte) x;
                }
                out.write(buf);
            }
        }
        tmp.renameTo(f);
    }

    public static void main(String[] a) throws Exception {
        if (a.length != 5) {
            System.err.println("usage: TaskPool THREADS ROUNDS TASKS WORK DATAFILE");
            System.exit(2);
        }
        int threads = Integer.parseInt(a[0]), rounds = Integer.parseInt(a[1]);
        int tasks = Integer.parseInt(a[2]), work = Integer.parseInt(a[3]);
        String data = a[4];
        makeData(data);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        long t0 = 0;
        for (int r = -2; r < rounds; r++) {
            if (r == 0)
                t0 = System.nanoTime();
            List<Callable<Long>> round = new ArrayList<>();
            for (int i = 0; i < tasks; i++) {
                final int k = i;
                round.add(() -> task(data, k, work));
            }
            for (Future<Long> f : pool.invokeAll(round))
                f.get();
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        pool.shutdown();
        System.out.printf("%.6f%n", secs);
    }
}
