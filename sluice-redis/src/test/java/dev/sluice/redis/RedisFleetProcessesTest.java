package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
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
    long start = System.currentTimeMillis() + 6000;   // time for the JVMs to start
    long end = start + 3000;
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    // the tests run on the module path: the worker gets it all as a class path
    String classPath = System.getProperty("java.class.path");
    String modulePath = System.getProperty("jdk.module.path");
    if (modulePath != null && !modulePath.isEmpty()) {
      classPath = modulePath + File.pathSeparator + classPath;
    }
    List<Process> jvms = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      jvms.add(new ProcessBuilder(java, "-Xmx128m", "-cp", classPath,
          FleetWorker.class.getName(), uri, prefix, "2", "8", Long.toString(start),
          Long.toString(end)).redirectErrorStream(true).start());
    }
    long admitted = 0;
    int lines = 0;
    for (Process p : jvms) {
      List<String> output = new ArrayList<>();
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          output.add(line);
        }
      }
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).as(String.join("\n", output)).isZero();
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
    assertThat(lines).as("eight instances reported").isEqualTo(8);
    // capacity 200 at 2,000/s over the 3 s window (a little more for the JVMs' clocks), plus
    // what the eight may hold: min(200, 10% of 2,000, 400) = 200
    assertThat((double) admitted).isLessThanOrEqualTo(200 + 2000 * 3.05 + 200);
    // leases were refilled many times over (a busy host slows cold JVMs, so no more is asked)
    assertThat(admitted).as("more than the capacity and the bound together").isGreaterThan(400);
  }
}
