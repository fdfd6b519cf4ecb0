package dev.sluice.jdbc;

import dev.sluice.spi.StoreUnavailableException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedTransferQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Where the store's asynchronous calls run (JDBC blocks, and an asynchronous caller must not):
 * created on first use, a fixed number of daemon threads, all started at once and kept, taking
 * calls from a lock-free queue; at most {@value #QUEUE} calls wait, past which a call fails as an
 * unavailable store would. Handing a call over never parks the caller, even when many event-loop
 * threads hand calls over at once: no lock is taken on the way in (no worker is created, and the
 * queue is a {@code LinkedTransferQueue}).
 */
public final class AsyncCalls implements AutoCloseable {
  public static final int QUEUE = 10_000;

  private final int threads;
  /** Names the store in failures. */
  private final String what;
  private final String threadName;
  private final AtomicInteger waiting = new AtomicInteger();
  private volatile ThreadPoolExecutor executor;

  public AsyncCalls(int threads, String what, String threadName) {
    this.threads = threads;
    this.what = what;
    this.threadName = threadName;
  }

  /** {@code call} on one of these threads; failed at once when too many wait or after close. */
  public <T> CompletableFuture<T> call(Supplier<T> call) {
    if (waiting.incrementAndGet() > QUEUE) {
      waiting.decrementAndGet();
      return CompletableFuture.failedFuture(new StoreUnavailableException(
          what + ": " + QUEUE + " asynchronous calls are already waiting", null));
    }
    try {
      return CompletableFuture.supplyAsync(() -> {
        waiting.decrementAndGet();
        return call.get();
      }, executor());
    } catch (RejectedExecutionException closed) {
      waiting.decrementAndGet();
      return CompletableFuture.failedFuture(new StoreUnavailableException(what + " is closed",
          closed));
    }
  }

  private ThreadPoolExecutor executor() {
    ThreadPoolExecutor e = executor;
    if (e == null) {
      synchronized (this) {
        e = executor;
        if (e == null) {
          AtomicInteger n = new AtomicInteger();
          e = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.SECONDS,
              new LinkedTransferQueue<>(), r -> {
                Thread t = new Thread(r, threadName + "-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
              });
          e.prestartAllCoreThreads();
          executor = e;
        }
      }
    }
    return e;
  }

  @Override
  public void close() {
    ThreadPoolExecutor e;
    synchronized (this) {
      e = executor;
      if (e == null) {
        // closed before first use: a later call fails as closed
        executor = e = new ThreadPoolExecutor(0, 1, 0, TimeUnit.SECONDS,
            new LinkedTransferQueue<>());
      }
    }
    e.shutdownNow();
  }
}
