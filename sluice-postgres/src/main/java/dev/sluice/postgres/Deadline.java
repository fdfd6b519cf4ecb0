package dev.sluice.postgres;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/*
 * Bounds a blocking call that offers no timeout of its own (DataSource.getConnection() waits as
 * long as the pool says: HikariCP's connectionTimeout, 30 s by default) by interrupting the
 * waiting thread when the decision's deadline passes. Pools wait interruptibly (HikariCP throws
 * "Interrupted during connection acquisition"), so the call fails at the deadline.
 *
 * The interrupt must never outlive the call: a guard's state goes WAITING -> DONE when the caller
 * finishes first (the timer task is cancelled and will not interrupt), or WAITING -> FIRING ->
 * FIRED when the timer wins; then the caller waits for FIRED and clears the interrupt it caused.
 */
final class Deadline {
  private static final int WAITING = 0;
  private static final int DONE = 1;
  private static final int FIRING = 2;
  private static final int FIRED = 3;

  private static final ScheduledThreadPoolExecutor TIMER = timer();

  private static ScheduledThreadPoolExecutor timer() {
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
      Thread thread = new Thread(r, "sluice-postgres-deadline");
      thread.setDaemon(true);
      return thread;
    });
    t.setRemoveOnCancelPolicy(true);
    return t;
  }

  private final Thread thread = Thread.currentThread();
  private final AtomicInteger state = new AtomicInteger(WAITING);
  private final ScheduledFuture<?> task;

  private Deadline(long nanos) {
    this.task = TIMER.schedule(this::fire, nanos, TimeUnit.NANOSECONDS);
  }

  /** Interrupts the calling thread in {@code nanos} unless {@link #disarm()} comes first. */
  static Deadline arm(long nanos) {
    return new Deadline(Math.max(0, nanos));
  }

  private void fire() {
    if (state.compareAndSet(WAITING, FIRING)) {
      thread.interrupt();
      state.set(FIRED);
    }
  }

  /**
   * Called by the armed thread when its call returns or fails; true if the deadline interrupted
   * it (the interrupt is then cleared).
   */
  boolean disarm() {
    if (state.compareAndSet(WAITING, DONE)) {
      task.cancel(false);
      return false;
    }
    while (state.get() != FIRED) {
      Thread.onSpinWait();
    }
    Thread.interrupted();
    return true;
  }
}
