package dev.sluice.jdbc;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/*
 * Bounds a blocking call that offers no timeout of its own (DataSource.getConnection() waits as
 * long as the pool says: HikariCP's connectionTimeout, 30 s by default) by interrupting the
 * waiting thread when the decision's deadline passes. Pools wait interruptibly (HikariCP throws
 * "Interrupted during connection acquisition"), so the call fails at the deadline.
 *
 * Cheap on the decision path: arming adds the guard to a concurrent set and disarming removes it;
 * nothing is scheduled and no thread is woken. One daemon watchdog looks at the set every 5 ms
 * and fires the guards whose deadline has passed, so a deadline is kept to within about 5 ms
 * (plus scheduling on a busy host).
 *
 * The interrupt never outlives the call: a guard's state goes WAITING -> DONE when the caller
 * finishes first (the watchdog then leaves it alone), or WAITING -> FIRING -> FIRED when the
 * watchdog wins; the caller then waits for FIRED and clears the interrupt it caused.
 */
public final class Deadline {
  private static final int WAITING = 0;
  private static final int DONE = 1;
  private static final int FIRING = 2;
  private static final int FIRED = 3;
  private static final long PERIOD_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

  private static final Set<Deadline> ARMED = ConcurrentHashMap.newKeySet();

  static {
    Thread watchdog = new Thread(Deadline::watch, "sluice-jdbc-deadline");
    watchdog.setDaemon(true);
    watchdog.start();
  }

  private final Thread thread = Thread.currentThread();
  private final long deadlineNanos;
  private final AtomicInteger state = new AtomicInteger(WAITING);

  private Deadline(long deadlineNanos) {
    this.deadlineNanos = deadlineNanos;
  }

  /** Interrupts the calling thread in {@code nanos} unless {@link #disarm()} comes first. */
  public static Deadline arm(long nanos) {
    Deadline d = new Deadline(System.nanoTime() + Math.max(0, nanos));
    ARMED.add(d);
    return d;
  }

  // ARMED is a concurrent set: removing while iterating is defined
  @SuppressWarnings("ModifyCollectionInEnhancedForLoop")
  private static void watch() {
    while (true) {
      LockSupport.parkNanos(PERIOD_NANOS);
      if (ARMED.isEmpty()) {
        continue;
      }
      long now = System.nanoTime();
      for (Deadline d : ARMED) {
        if (now - d.deadlineNanos >= 0 && ARMED.remove(d)) {
          d.fire();
        }
      }
    }
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
  public boolean disarm() {
    ARMED.remove(this);
    if (state.compareAndSet(WAITING, DONE)) {
      return false;
    }
    while (state.get() != FIRED) {
      Thread.onSpinWait();
    }
    Thread.interrupted();
    return true;
  }
}
