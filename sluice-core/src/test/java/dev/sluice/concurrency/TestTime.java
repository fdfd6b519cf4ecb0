package dev.sluice.concurrency;

import dev.sluice.Clock;
import dev.sluice.Scheduler;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;

/** Virtual time for tests: the clock moves only when told, and due tasks run then, in order. */
final class TestTime implements Clock, Scheduler {
  private record Task(long due, long seq, Runnable run) {}

  private long now = 1_000_000_000L;
  private long seq;
  private final PriorityQueue<Task> tasks = new PriorityQueue<>((a, b) ->
      a.due != b.due ? Long.compare(a.due, b.due) : Long.compare(a.seq, b.seq));

  @Override
  public synchronized long nanoTime() {
    return now;
  }

  @Override
  public synchronized void schedule(Runnable task, long delayNanos) {
    tasks.add(new Task(now + delayNanos, seq++, task));
  }

  /** Moves the clock {@code nanos} ahead, running each task as its time comes. */
  void advance(long nanos) {
    long target;
    synchronized (this) {
      target = now + nanos;
    }
    for (;;) {
      List<Runnable> due = new ArrayList<>();
      synchronized (this) {
        Task t = tasks.peek();
        if (t == null || t.due > target) {
          now = target;
          return;
        }
        tasks.poll();
        now = Math.max(now, t.due);
        due.add(t.run);
      }
      due.forEach(Runnable::run);
    }
  }
}
