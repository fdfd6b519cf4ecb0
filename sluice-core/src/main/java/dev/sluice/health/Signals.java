package dev.sluice.health;

import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.lang.management.OperatingSystemMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * The built-in {@link HealthSignal}s: CPU (the process's, and the container's under its quota),
 * the time work waited for a CPU (pressure, which sees a neighbour), the GC's share of time, the heap after GC, and a thread pool's use. Each is a utilization from
 * 0 to 1 (1: all of it); rates are measured between two readings, so a signal's first reading is
 * {@code NaN} (healthy) and each later one covers the time since the one before.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/health.md#which-signal">docs/health.md, "Which signal"</a>.
 */
public final class Signals {
  private static final Path CGROUP_ROOT = Path.of("/sys/fs/cgroup");

  private Signals() {}

  /**
   * The CPU this process uses, as a share of the CPU it may use ({@code cpu}): its CPU time over
   * the time passed times the processors the JVM sees, which a container's CPU quota sets (the
   * JVM reads it); {@code NaN} where the JVM does not say its CPU time.
   */
  public static HealthSignal processCpu() {
    OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    if (!(os instanceof com.sun.management.OperatingSystemMXBean bean)) {
      return HealthSignal.of("cpu", () -> Double.NaN);
    }
    return new Rate("cpu", bean::getProcessCpuTime, System::nanoTime,
        () -> Runtime.getRuntime().availableProcessors());
  }

  /**
   * The CPU this process's container (its control group) uses, every process in it, as a share
   * of its quota ({@code container.cpu}): cgroup v2's {@code cpu.stat} ({@code usage_usec}) and
   * {@code cpu.max}, or v1's {@code cpuacct.usage} and {@code cpu.cfs_quota_us} / {@code
   * cpu.cfs_period_us}; without a quota, of the processors the JVM sees. Where no control group
   * can be read (not Linux), the process's CPU ({@link #processCpu()}) under this name.
   */
  public static HealthSignal containerCpu() {
    Path group = ownCgroupV2(CGROUP_ROOT);
    if (group != null && Files.isReadable(group.resolve("cpu.stat"))) {
      return cgroupV2Cpu(group, System::nanoTime);
    }
    Path v1 = CGROUP_ROOT.resolve("cpu,cpuacct");
    if (!Files.isDirectory(v1)) {
      v1 = CGROUP_ROOT.resolve("cpuacct");
    }
    if (Files.isReadable(v1.resolve("cpuacct.usage"))) {
      return cgroupV1Cpu(v1, System::nanoTime);
    }
    HealthSignal process = processCpu();
    return HealthSignal.of("container.cpu", process::read);
  }

  /** The control group v2 directory of this process, from {@code /proc/self/cgroup}; or null. */
  static Path ownCgroupV2(Path root) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/cgroup"),
          StandardCharsets.UTF_8)) {
        if (line.startsWith("0::")) {
          String relative = line.substring(3);
          Path dir = root.resolve(relative.startsWith("/") ? relative.substring(1) : relative);
          return Files.isDirectory(dir) ? dir : root;
        }
      }
    } catch (IOException | RuntimeException e) {
      // not Linux, or no v2 hierarchy
    }
    return null;
  }

  /** The container's CPU from a cgroup v2 directory, timed by {@code nanos}. */
  static HealthSignal cgroupV2Cpu(Path group, LongSupplier nanos) {
    return new Rate("container.cpu", () -> {
      for (String line : lines(group.resolve("cpu.stat"))) {
        if (line.startsWith("usage_usec ")) {
          return Long.parseLong(line.substring(11).trim()) * 1000;
        }
      }
      return -1;
    }, nanos, () -> {
      String[] max = firstLine(group.resolve("cpu.max")).trim().split(" ", -1);
      if (max.length == 2 && !max[0].equals("max")) {
        return Double.parseDouble(max[0]) / Double.parseDouble(max[1]);
      }
      return Runtime.getRuntime().availableProcessors();
    });
  }

  /** The container's CPU from a cgroup v1 {@code cpu,cpuacct} directory, timed by {@code nanos}. */
  static HealthSignal cgroupV1Cpu(Path group, LongSupplier nanos) {
    return new Rate("container.cpu",
        () -> Long.parseLong(firstLine(group.resolve("cpuacct.usage")).trim()), nanos, () -> {
          Path quota = group.resolve("cpu.cfs_quota_us");
          long q = Files.isReadable(quota) ? Long.parseLong(firstLine(quota).trim()) : -1;
          if (q > 0) {
            return q / Double.parseDouble(firstLine(group.resolve("cpu.cfs_period_us")).trim());
          }
          return Runtime.getRuntime().availableProcessors();
        });
  }

  /**
   * How much of the time work waited for a CPU ({@code cpu.pressure}): Linux's pressure stall
   * information, the share of wall time in which at least one task was runnable but not running
   * ({@code some}), from this control group's {@code cpu.pressure} (cgroup v2) or the whole
   * host's {@code /proc/pressure/cpu}. Unlike the CPU signals it sees a neighbour: a backend
   * whose CPU is taken by another process or container uses little CPU of its own and waits for
   * it, which only this signal reads. {@code NaN} where the kernel does not say it (not Linux,
   * or a kernel before 4.20 or without PSI).
   */
  public static HealthSignal cpuPressure() {
    Path group = ownCgroupV2(CGROUP_ROOT);
    if (group != null && Files.isReadable(group.resolve("cpu.pressure"))) {
      return cpuPressure(group.resolve("cpu.pressure"), System::nanoTime);
    }
    Path host = Path.of("/proc/pressure/cpu");
    if (Files.isReadable(host)) {
      return cpuPressure(host, System::nanoTime);
    }
    return HealthSignal.of("cpu.pressure", () -> Double.NaN);
  }

  /** CPU pressure from a PSI file ({@code some ... total=<microseconds>}), timed by {@code nanos}. */
  static HealthSignal cpuPressure(Path file, LongSupplier nanos) {
    return new Rate("cpu.pressure", () -> {
      for (String line : lines(file)) {
        if (line.startsWith("some ")) {
          int at = line.indexOf("total=");
          if (at >= 0) {
            return Long.parseLong(line.substring(at + 6).trim()) * 1000;
          }
        }
      }
      return -1;
    }, nanos, () -> 1);
  }

  /**
   * The share of time the garbage collectors took ({@code gc}): their collection time over the
   * time passed (a stop-the-world collector's pauses; a concurrent one's cycles count too, as
   * its beans report them).
   */
  public static HealthSignal gcTimeShare() {
    List<GarbageCollectorMXBean> gcs = ManagementFactory.getGarbageCollectorMXBeans();
    return gcTimeShare(() -> {
      long millis = 0;
      for (GarbageCollectorMXBean gc : gcs) {
        millis += Math.max(0, gc.getCollectionTime());
      }
      return millis * 1_000_000;
    }, System::nanoTime);
  }

  /** The GC's share of time from {@code collectionNanos}, timed by {@code nanos}. */
  static HealthSignal gcTimeShare(LongSupplier collectionNanos, LongSupplier nanos) {
    return new Rate("gc", collectionNanos, nanos, () -> 1);
  }

  /**
   * How full the heap is after the last collection ({@code heap}): of each heap pool that says
   * its usage after a collection and has a maximum, the fullest's share. A heap that stays full
   * after collecting is running out.
   */
  public static HealthSignal heapAfterGc() {
    List<MemoryPoolMXBean> pools = ManagementFactory.getMemoryPoolMXBeans();
    return HealthSignal.of("heap", () -> {
      double fullest = Double.NaN;
      for (MemoryPoolMXBean pool : pools) {
        if (pool.getType() != MemoryType.HEAP) {
          continue;
        }
        MemoryUsage after = pool.getCollectionUsage();
        if (after != null && after.getMax() > 0) {
          double share = (double) after.getUsed() / after.getMax();
          fullest = Double.isNaN(fullest) ? share : Math.max(fullest, share);
        }
      }
      return fullest;
    });
  }

  /**
   * How used a thread pool is ({@code name}): its busy threads over its most, or its queue's
   * fill over its capacity (a bounded queue), whichever is more. A pool of an unbounded queue
   * reads 1 once it queues a task: all its threads are busy and work waits.
   */
  public static HealthSignal executor(String name, ThreadPoolExecutor pool) {
    Objects.requireNonNull(pool, "pool");
    return HealthSignal.of(name, () -> {
      double threads = (double) pool.getActiveCount() / pool.getMaximumPoolSize();
      int queued = pool.getQueue().size();
      int room = pool.getQueue().remainingCapacity();
      double queue = room == Integer.MAX_VALUE ? (queued > 0 ? 1 : 0)
          : (double) queued / Math.max(1, queued + room);
      return Math.min(1, Math.max(threads, queue));
    });
  }

  /**
   * How late {@code executor} runs what it is given, in milliseconds ({@code name}): an event
   * loop's lag (Netty's {@code eventLoopGroup.next()}, Reactor's {@code
   * Schedulers.parallel()::schedule}), a pool's queueing. Each reading sends a probe (one at a
   * time) and answers the last probe's delay, or the age of a probe still waiting if that is
   * more, so a loop that is stuck reads ever later; an executor that refuses the probe reads
   * infinity. The first reading is {@code NaN}.
   */
  public static HealthSignal lag(String name, Executor executor) {
    return lag(name, executor, System::nanoTime);
  }

  /** {@link #lag} timed by {@code nanos}. */
  static HealthSignal lag(String name, Executor executor, LongSupplier nanos) {
    Objects.requireNonNull(executor, "executor");
    String checked = checkName(name);
    return new HealthSignal() {
      private final AtomicBoolean probing = new AtomicBoolean();
      private volatile long sentAt;
      private volatile double lastMillis = Double.NaN;

      @Override
      public String name() {
        return checked;
      }

      @Override
      public double read() {
        long now = nanos.getAsLong();
        if (probing.compareAndSet(false, true)) {
          sentAt = now;
          try {
            executor.execute(() -> {
              lastMillis = (nanos.getAsLong() - sentAt) / 1e6;
              probing.set(false);
            });
          } catch (RejectedExecutionException e) {
            probing.set(false);
            return Double.POSITIVE_INFINITY;
          }
          return lastMillis;
        }
        double waiting = (now - sentAt) / 1e6;
        double last = lastMillis;
        return Double.isNaN(last) ? waiting : Math.max(last, waiting);
      }

      @Override
      public String toString() {
        return checked;
      }
    };
  }

  /** {@code name}, checked: a signal's name is not blank. */
  static String checkName(String name) {
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException("a health signal's name must not be blank but was "
          + (name == null ? "null" : "'" + name + "'"));
    }
    return name;
  }

  private static List<String> lines(Path file) {
    try {
      return Files.readAllLines(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException("cannot read " + file, e);
    }
  }

  private static String firstLine(Path file) {
    List<String> lines = lines(file);
    if (lines.isEmpty()) {
      throw new IllegalStateException(file + " is empty");
    }
    return lines.get(0);
  }

  /** How many processors' time a counter may use per unit of time (1 for the GC's share). */
  @FunctionalInterface
  interface Capacity {
    double units();
  }

  /**
   * A counter of nanoseconds used (CPU, GC) as a share of the time passed times a capacity (in
   * processors), from 0 to 1; the first reading, and a reading that fails, is NaN. A reading less
   * than {@link #MIN_INTERVAL} after the last answers the last share again: over microseconds the
   * counters' own granularity makes any rate noise (a process's CPU time read twice within a few
   * microseconds once gave 49 times its processors).
   */
  static final class Rate implements HealthSignal {
    /** The shortest time over which a rate is measured: 1 ms. */
    static final long MIN_INTERVAL = 1_000_000L;
    private final String name;
    private final LongSupplier used;
    private final LongSupplier nanos;
    private final Capacity capacity;
    private long lastUsed = -1;
    private long lastAt;
    private double lastShare = Double.NaN;

    Rate(String name, LongSupplier used, LongSupplier nanos, Capacity capacity) {
      this.name = checkName(name);
      this.used = used;
      this.nanos = nanos;
      this.capacity = capacity;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public synchronized double read() {
      long now = nanos.getAsLong();
      if (lastUsed >= 0 && now - lastAt < MIN_INTERVAL) {
        return lastShare;
      }
      long u;
      double units;
      try {
        u = used.getAsLong();
        units = capacity.units();
      } catch (RuntimeException e) {
        lastUsed = -1;
        lastShare = Double.NaN;
        return Double.NaN;
      }
      long before = lastUsed;
      long since = now - lastAt;
      lastUsed = u;
      lastAt = now;
      if (before < 0 || u < 0 || since <= 0 || !(units > 0)) {
        lastShare = Double.NaN;
        return Double.NaN;
      }
      lastShare = Math.min(1, Math.max(0, (u - before) / (since * units)));
      return lastShare;
    }

    @Override
    public String toString() {
      return name;
    }
  }
}
