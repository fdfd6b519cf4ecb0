package dev.sluice.testkit;

import dev.sluice.Clock;
import dev.sluice.Scheduler;
import java.time.Duration;
import java.util.PriorityQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A clock that moves only when told to, and a scheduler that runs tasks when the clock reaches
 * them. {@link #sleep(long)} advances the clock instead of sleeping, so blocking code runs
 * instantly and exactly. Thread-safe.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class ManualClock implements Clock, Scheduler {
  private final AtomicLong now;
  private final PriorityQueue<Task> tasks = new PriorityQueue<>();
  private long sequence;

  /** A clock at 0 ns. */
  public ManualClock() {
    this(0);
  }

  /** A clock at {@code nanos}. */
  public ManualClock(long nanos) {
    this.now = new AtomicLong(nanos);
  }

  @Override
  public long nanoTime() {
    return now.get();
  }

  /** Moves the clock forward and runs every task that falls due, in order. */
  public void advance(Duration duration) {
    advanceNanos(duration.toNanos());
  }

  /**
   * Moves the clock forward by {@code nanos} and runs every task that falls due, in order.
   * Concurrent advances add up: each is atomic.
   */
  public synchronized void advanceNanos(long nanos) {
    if (nanos < 0) {
      throw new IllegalArgumentException("advance must not be negative but was " + nanos);
    }
    long target = now.get() + nanos;
    for (;;) {
      Task due;
      synchronized (tasks) {
        due = tasks.peek();
        if (due == null || due.at > target) {
          break;
        }
        tasks.poll();
      }
      now.accumulateAndGet(due.at, Math::max);
      due.task.run();
    }
    now.accumulateAndGet(target, Math::max);
  }

  /** Sets the clock, backwards too: limiters must treat going back as no time passing. */
  public synchronized void set(long nanos) {
    now.set(nanos);
  }

  /** Advances the clock by {@code nanos}: a virtual sleep. */
  @Override
  public void sleep(long nanos) throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException();
    }
    advanceNanos(nanos);
  }

  @Override
  public void schedule(Runnable task, long delayNanos) {
    synchronized (tasks) {
      tasks.add(new Task(now.get() + Math.max(0, delayNanos), sequence++, task));
    }
  }

  /** Tasks scheduled and not yet run. */
  public int pendingTasks() {
    synchronized (tasks) {
      return tasks.size();
    }
  }

  @Override
  public String toString() {
    return "ManualClock[" + now.get() + "ns]";
  }

  private static final class Task implements Comparable<Task> {
    final long at;
    final long seq;
    final Runnable task;

    Task(long at, long seq, Runnable task) {
      this.at = at;
      this.seq = seq;
      this.task = task;
    }

    @Override
    public int compareTo(Task o) {
      return at != o.at ? Long.compare(at, o.at) : Long.compare(seq, o.seq);
    }
  }
}
