package dev.sluice;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** The shared scheduler: one daemon thread, created when first used. */
final class SharedScheduler implements Scheduler {
  static final SharedScheduler INSTANCE = new SharedScheduler();

  private final ScheduledThreadPoolExecutor executor;

  private SharedScheduler() {
    AtomicInteger count = new AtomicInteger();
    executor = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "sluice-scheduler-" + count.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    executor.setRemoveOnCancelPolicy(true);
  }

  // FutureReturnValueIgnored: Scheduler.schedule is fire and forget: its tasks catch their own failures
  @SuppressWarnings("FutureReturnValueIgnored")
  @Override
  public void schedule(Runnable task, long delayNanos) {
    executor.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
  }

  @Override
  public String toString() {
    return "Scheduler.system()";
  }
}
