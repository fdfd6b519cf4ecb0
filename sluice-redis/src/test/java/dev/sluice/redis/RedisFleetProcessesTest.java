package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Fleet mode across processes: four JVMs with two limiter instances each (eight in all, each
 * with its own connection) share one hot key of a real Redis for three seconds. What they admit
 * together stays within the limit plus the bound, and every lease is given back on close.
 */
class RedisFleetProcessesTest {
  private static final Pattern LINE = Pattern.compile(
      "admitted=(\\d+) granted=(\\d+) spent=(\\d+) returned=(\\d+) held=(\\d+) stranded=(\\d+) errors=(\\d+)");

  @Test
  void fourJvmsOfTwoInstances_admitWithinTheBound_andGiveEveryLeaseBack() throws Exception {
    String uri = TestRedis.uri();
    String prefix = "procs:" + System.nanoTime() + ":";
    long admitted = 0;
    int lines = 0;
    try (WorkerJvms jvms = WorkerJvms.start(FleetWorker.class,
        Collections.nCopies(4, List.of(uri, prefix, "2", "8")))) {
      jvms.go(3000);
      for (List<String> output : jvms.finish(Duration.ofSeconds(60))) {
        for (String line : output) {
          Matcher m = LINE.matcher(line);
          if (!m.find()) {
            continue;
          }
          lines++;
          admitted += Long.parseLong(m.group(1));
          long granted = Long.parseLong(m.group(2));
          assertThat(granted).as("granted = spent + returned: " + line)
              .isEqualTo(Long.parseLong(m.group(3)) + Long.parseLong(m.group(4)));
          assertThat(Long.parseLong(m.group(5))).as("held after close").isZero();
          assertThat(Long.parseLong(m.group(6))).as("stranded").isZero();
          assertThat(Long.parseLong(m.group(7))).as("store errors").isZero();
        }
      }
    }
    assertThat(lines).as("eight instances reported").isEqualTo(8);
    // capacity 200 at 2,000/s over the 3 s window (a little more for the JVMs' clocks), plus
    // what the eight may hold: min(200, 10% of 2,000, 400) = 200
    assertThat((double) admitted).isLessThanOrEqualTo(200 + 2000 * 3.05 + 200);
    // leases were refilled many times over (a busy host slows cold JVMs, so no more is asked)
    assertThat(admitted).as("more than the capacity and the bound together").isGreaterThan(400);
  }
}
