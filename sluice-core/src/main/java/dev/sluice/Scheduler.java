package dev.sluice;

/**
 * Runs a task after a delay; used by {@code acquireAsync} so that a waiting caller holds no
 * thread. Implementations must be thread-safe and must not run the task on the calling thread.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/semantics.md#time">docs/semantics.md, "Time"</a>.
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
    return SharedScheduler.INSTANCE;
  }
}
