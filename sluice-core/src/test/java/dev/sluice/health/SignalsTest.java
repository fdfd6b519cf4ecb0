package dev.sluice.health;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The built-in signals, read from a fake cgroup tree, stand-in counters and real pools. */
class SignalsTest {
  private static final Offset<Double> EXACT = Offset.offset(1e-9);
  private final AtomicLong nanos = new AtomicLong(5_000_000_000L);

  @TempDir
  Path dir;

  private void write(String file, String text) throws Exception {
    Files.writeString(dir.resolve(file), text);
  }

  @Test
  void cgroupV2_theContainersCpu_isItsUsageOverItsQuota() throws Exception {
    write("cpu.max", "200000 100000\n");   // two CPUs' worth
    write("cpu.stat", "usage_usec 1000000\nuser_usec 900000\nsystem_usec 100000\n");
    HealthSignal cpu = Signals.cgroupV2Cpu(dir, nanos::get);
    assertThat(cpu.name()).isEqualTo("container.cpu");
    assertThat(cpu.read()).as("a rate needs two readings").isNaN();
    nanos.addAndGet(1_000_000_000L);   // a second in which the container used 1.5 s of CPU
    write("cpu.stat", "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n");
    assertThat(cpu.read()).isCloseTo(0.75, EXACT);
    nanos.addAndGet(500_000_000L);     // half a second at its whole quota
    write("cpu.stat", "usage_usec 3500000\n");
    assertThat(cpu.read()).isCloseTo(1.0, EXACT);
  }

  /** PSI's {@code some} total (microseconds) over the time passed: the share of time work waited. */
  @Test
  void cpuPressure_isTheShareOfTimeSomeTaskWaitedForACpu() throws Exception {
    write("cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000000\n"
        + "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    HealthSignal pressure = Signals.cpuPressure(dir.resolve("cpu.pressure"), nanos::get);
    assertThat(pressure.name()).isEqualTo("cpu.pressure");
    assertThat(pressure.read()).as("a rate needs two readings").isNaN();
    nanos.addAndGet(1_000_000_000L);   // a second in which some task waited 400 ms
    write("cpu.pressure", "some avg10=40.00 avg60=6.00 avg300=2.00 total=1400000\n"
        + "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    assertThat(pressure.read()).isCloseTo(0.4, EXACT);
    nanos.addAndGet(100_000_000L);
    write("cpu.pressure", "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    assertThat(pressure.read()).as("no 'some' line: not a reading").isNaN();
  }

  @Test
  void cgroupV2_withoutAQuota_isOfTheProcessorsTheJvmSees() throws Exception {
    write("cpu.max", "max 100000\n");
    write("cpu.stat", "usage_usec 0\n");
    HealthSignal cpu = Signals.cgroupV2Cpu(dir, nanos::get);
    cpu.read();
    nanos.addAndGet(1_000_000_000L);
    write("cpu.stat", "usage_usec 1000000\n");
    assertThat(cpu.read()).isCloseTo(1.0 / Runtime.getRuntime().availableProcessors(), EXACT);
  }

  @Test
  void cgroupV1_theContainersCpu_isItsUsageOverItsQuota() throws Exception {
    write("cpu.cfs_quota_us", "50000\n");    // half a CPU
    write("cpu.cfs_period_us", "100000\n");
    write("cpuacct.usage", "0\n");            // nanoseconds
    HealthSignal cpu = Signals.cgroupV1Cpu(dir, nanos::get);
    cpu.read();
    nanos.addAndGet(2_000_000_000L);
    write("cpuacct.usage", "800000000\n");
    assertThat(cpu.read()).isCloseTo(0.8, EXACT);
    write("cpu.cfs_quota_us", "-1\n");        // no quota: of the processors the JVM sees
    nanos.addAndGet(1_000_000_000L);
    write("cpuacct.usage", "1800000000\n");
    assertThat(cpu.read())
        .isCloseTo(1.0 / Runtime.getRuntime().availableProcessors(), EXACT);
  }

  @Test
  void aCgroupFileThatCannotBeRead_readsNaN_andTheNextReadingStartsOver() throws Exception {
    write("cpu.max", "100000 100000\n");
    HealthSignal cpu = Signals.cgroupV2Cpu(dir, nanos::get);
    assertThat(cpu.read()).isNaN();   // no cpu.stat
    write("cpu.stat", "usage_usec 10\n");
    assertThat(cpu.read()).isNaN();   // the first good reading
    nanos.addAndGet(1_000_000L);
    write("cpu.stat", "usage_usec 510\n");
    assertThat(cpu.read()).isCloseTo(0.5, EXACT);
  }

  @Test
  void ownCgroup_isFoundUnderTheRoot_orIsTheRoot() {
    Path found = Signals.ownCgroupV2(dir);
    if (Files.isReadable(Path.of("/proc/self/cgroup"))) {
      assertThat(found).as("a v2 line names a directory; missing under a fake root: the root")
          .isIn(dir, null);
    } else {
      assertThat(found).isNull();
    }
  }

  @Test
  void readingsCloserThanAMillisecond_answerTheLastShare_andSharesStayWithin0And1()
      throws Exception {
    AtomicLong used = new AtomicLong();
    HealthSignal cpu = Signals.gcTimeShare(used::get, nanos::get);
    cpu.read();
    nanos.addAndGet(10_000L);       // 10 us later: a counter's granularity, not a rate
    used.addAndGet(490_000L);
    assertThat(cpu.read()).as("still no rate").isNaN();
    nanos.addAndGet(990_000L);      // 1 ms after the first reading
    assertThat(cpu.read()).isCloseTo(0.49, EXACT);
    nanos.addAndGet(500L);
    used.addAndGet(1_000_000L);
    assertThat(cpu.read()).as("the last share again").isCloseTo(0.49, EXACT);
    nanos.addAndGet(1_000_000L);
    used.addAndGet(5_000_000L);     // counters running ahead of the clock
    assertThat(cpu.read()).as("at most all of it").isEqualTo(1.0);
  }

  @Test
  void theGcsShare_isItsCollectionTimeOverTheTimePassed() {
    AtomicLong collected = new AtomicLong();
    HealthSignal gc = Signals.gcTimeShare(collected::get, nanos::get);
    assertThat(gc.name()).isEqualTo("gc");
    gc.read();
    nanos.addAndGet(1_000_000_000L);
    collected.addAndGet(250_000_000L);
    assertThat(gc.read()).isCloseTo(0.25, EXACT);
  }

  @Test
  void theJvmsOwnSignals_readNumbersInRange() {
    HealthSignal process = Signals.processCpu();
    process.read();
    double v = process.read();
    assertThat(Double.isNaN(v) || (v >= 0 && v <= 1)).as("process cpu %s", v).isTrue();
    double heap = Signals.heapAfterGc().read();
    assertThat(Double.isNaN(heap) || (heap >= 0 && heap <= 1)).as("heap %s", heap).isTrue();
    HealthSignal container = Signals.containerCpu();
    assertThat(container.name()).isEqualTo("container.cpu");
    container.read();
    double c = container.read();
    assertThat(Double.isNaN(c) || c >= 0).isTrue();
    HealthSignal cpuPressure = Signals.cpuPressure();
    cpuPressure.read();
    double pr = cpuPressure.read();
    assertThat(Double.isNaN(pr) || (pr >= 0 && pr <= 1)).as("cpu pressure %s", pr).isTrue();
    HealthSignal gc = Signals.gcTimeShare();
    gc.read();
    double g = gc.read();
    assertThat(Double.isNaN(g) || (g >= 0 && g <= 1.5)).as("gc %s", g).isTrue();
  }

  @Test
  void anExecutorsLag_isItsLastProbesDelay_orAWaitingProbesAge() {
    java.util.ArrayDeque<Runnable> loop = new java.util.ArrayDeque<>();
    HealthSignal lag = Signals.lag("event-loop", loop::add, nanos::get);
    assertThat(lag.name()).isEqualTo("event-loop");
    assertThat(lag.read()).as("no probe has run yet").isNaN();
    nanos.addAndGet(30_000_000L);
    assertThat(lag.read()).as("the probe has waited 30 ms").isCloseTo(30.0, EXACT);
    assertThat(loop).as("one probe at a time").hasSize(1);
    nanos.addAndGet(20_000_000L);
    loop.poll().run();                      // it ran 50 ms late
    assertThat(lag.read()).isCloseTo(50.0, EXACT);   // and sends the next probe
    loop.poll().run();                      // on time
    assertThat(lag.read()).isCloseTo(0.0, EXACT);
    HealthSignal refused = Signals.lag("full", task -> {
      throw new java.util.concurrent.RejectedExecutionException("full");
    }, nanos::get);
    assertThat(refused.read()).isInfinite();
  }

  @Test
  void aPool_readsItsBusyThreadsOrItsQueue_whicheverIsFuller() throws Exception {
    ThreadPoolExecutor pool = new ThreadPoolExecutor(2, 2, 1, TimeUnit.MINUTES,
        new ArrayBlockingQueue<>(4));
    CountDownLatch hold = new CountDownLatch(1);
    CountDownLatch started = new CountDownLatch(2);
    try {
      HealthSignal s = Signals.executor("workers", pool);
      assertThat(s.read()).isZero();
      for (int i = 0; i < 3; i++) {
        pool.execute(() -> {
          started.countDown();
          try {
            hold.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
      }
      assertThat(started.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(s.read()).as("both threads busy").isEqualTo(1.0);
      ThreadPoolExecutor unbounded = new ThreadPoolExecutor(4, 4, 1, TimeUnit.MINUTES,
          new LinkedBlockingQueue<>());
      try {
        assertThat(Signals.executor("u", unbounded).read()).isZero();
      } finally {
        unbounded.shutdown();
      }
    } finally {
      hold.countDown();
      pool.shutdown();
    }
  }
}
