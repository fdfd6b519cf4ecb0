package dev.sluice;

import java.util.concurrent.locks.LockSupport;

/**
 * Watches this process for pauses: a daemon thread parks 5 ms at a time, and a wake-up 20 ms or
 * more late means the process could not run (a GC's stop-the-world, a starved CPU, a stopped
 * process). The last 256 pauses are kept. Started by the first question.
 */
final class PauseWatch implements Runnable {
  static final PauseWatch INSTANCE = new PauseWatch();
  /** How long the watcher parks each time. */
  static final long TICK_NANOS = 5_000_000L;
  /** How late a wake-up must be to count as a pause. */
  static final long PAUSE_NANOS = 20_000_000L;
  private static final int KEPT = 256;

  private final long[] starts = new long[KEPT];
  private final long[] ends = new long[KEPT];
  private int next;
  private int count;
  /** When the last pause recorded ended (MIN_VALUE: none): the fast path's answer. */
  private volatile long lastEnd = Long.MIN_VALUE;
  private volatile boolean started;

  private PauseWatch() {}

  /** A watch that starts no thread: its pauses are the ones {@link #record}ed (for tests). */
  static PauseWatch unwatched() {
    PauseWatch w = new PauseWatch();
    w.started = true;
    return w;
  }

  /** Nanoseconds of recorded pauses within [from, to] of {@link System#nanoTime()}. */
  long pausedNanos(long from, long to) {
    if (!started) {
      start();
    }
    if (lastEnd <= from || to <= from) {
      return 0;
    }
    long paused = 0;
    synchronized (this) {
      for (int i = 0; i < count; i++) {
        long s = Math.max(from, starts[i]);
        long e = Math.min(to, ends[i]);
        if (e > s) {
          paused += e - s;
        }
      }
    }
    return paused;
  }

  private synchronized void start() {
    if (started) {
      return;
    }
    Thread t = new Thread(this, "sluice-pause-watch");
    t.setDaemon(true);
    t.start();
    started = true;
  }

  /** Records a pause (for tests, and the watcher). */
  synchronized void record(long start, long end) {
    starts[next] = start;
    ends[next] = end;
    next = (next + 1) % KEPT;
    count = Math.min(KEPT, count + 1);
    lastEnd = Math.max(lastEnd, end);
  }

  @Override
  public void run() {
    long before = System.nanoTime();
    for (;;) {
      LockSupport.parkNanos(TICK_NANOS);
      long after = System.nanoTime();
      if (after - before - TICK_NANOS >= PAUSE_NANOS) {
        record(before + TICK_NANOS, after);
      }
      before = after;
    }
  }
}
