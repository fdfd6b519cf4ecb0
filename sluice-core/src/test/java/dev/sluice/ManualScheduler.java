package dev.sluice;

import java.util.ArrayList;
import java.util.List;

/** A scheduler whose tasks run when the test says so. */
final class ManualScheduler implements Scheduler {
  private final List<Runnable> tasks = new ArrayList<>();

  @Override
  public synchronized void schedule(Runnable task, long delayNanos) {
    tasks.add(task);
  }

  /** Runs every task scheduled so far (tasks they schedule wait for the next call). */
  void runAll() {
    List<Runnable> now;
    synchronized (this) {
      now = new ArrayList<>(tasks);
      tasks.clear();
    }
    now.forEach(Runnable::run);
  }
}
