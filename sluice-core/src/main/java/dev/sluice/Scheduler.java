package dev.sluice;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs a task after a delay; used by {@code acquireAsync} so that a waiting caller holds no
 * thread. Implementations must be thread-safe and must not run the task on the calling thread.
 */
@FunctionalInterface
public interface Scheduler {
  /** Runs {@code task} once, no earlier than {@code delayNanos} from now. */
  void schedule(Runnable task, long delayNanos);

  /**
   * A shared scheduler: one daemon thread, created on first use, that only hands tasks over;
   * the work of a task is one decision.
   */
  static Scheduler system() {
    return Shared.INSTANCE;
  }

  /** Lazily created shared executor. */
  final class Shared implements Scheduler {
    static final Shared INSTANCE = new Shared();
    private final ScheduledThreadPoolExecutor executor;

    private Shared() {
      AtomicInteger count = new AtomicInteger();
      ThreadFactory threads = r -> {
        Thread t = new Thread(r, "sluice-scheduler-" + count.incrementAndGet());
        t.setDaemon(true);
        return t;
      };
      executor = new ScheduledThreadPoolExecutor(1, threads);
      executor.setRemoveOnCancelPolicy(true);
    }

    @Override
    public void schedule(Runnable task, long delayNanos) {
      executor.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
    }
  }
}
