package dev.sluice;

import java.util.concurrent.locks.LockSupport;

/** The system clock, a singleton so that limiters can tell it needs no monotonic guard. */
enum SystemClock implements Clock {
  INSTANCE;

  @Override
  public long nanoTime() {
    return System.nanoTime();
  }

  @Override
  public void sleep(long nanos) throws InterruptedException {
    long deadline = System.nanoTime() + nanos;
    for (long left = nanos; left > 0; left = deadline - System.nanoTime()) {
      LockSupport.parkNanos(this, left);
      if (Thread.interrupted()) {
        throw new InterruptedException();
      }
    }
  }

  @Override
  public long pausedNanos(long fromNanos, long toNanos) {
    return PauseWatch.INSTANCE.pausedNanos(fromNanos, toNanos);
  }

  @Override
  public String toString() {
    return "Clock.system()";
  }
}
