package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/** The system clock's pause watch: the pauses it keeps, and a real stop of this JVM. */
class PauseWatchTest {
  @Test
  void pausedNanos_isTheOverlapWithTheRecordedPauses() {
    PauseWatch w = PauseWatch.unwatched();
    long base = System.nanoTime();
    w.record(base + 100, base + 200);
    w.record(base + 300, base + 350);
    assertThat(w.pausedNanos(base, base + 1000)).isEqualTo(150);
    assertThat(w.pausedNanos(base + 150, base + 320)).isEqualTo(50 + 20);
    assertThat(w.pausedNanos(base + 200, base + 300)).as("between the two").isZero();
    assertThat(w.pausedNanos(base + 400, base + 500)).as("after both: the fast path").isZero();
  }

  /** A child process stops this JVM for 150 ms (kill -STOP, then -CONT): the clock saw it. */
  @Test
  @EnabledOnOs(OS.LINUX)
  void aStopOfThisProcess_isSeenByTheSystemClock() throws Exception {
    Clock clock = Clock.system();
    long before = clock.nanoTime();
    clock.pausedNanos(before, before);   // starts the watch
    Thread.sleep(50);   // the watch thread runs before the stop, not timing anything
    long pid = ProcessHandle.current().pid();
    Process stop = new ProcessBuilder("sh", "-c",
        "kill -STOP " + pid + "; sleep 0.15; kill -CONT " + pid).start();
    assertThat(stop.waitFor(30, TimeUnit.SECONDS)).isTrue();
    // the watch thread records the stop when it next runs: poll for it (on a busy host that may
    // take a while; this waits for it, it does not time it)
    long paused = 0;
    long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (paused < TimeUnit.MILLISECONDS.toNanos(100) && System.nanoTime() < giveUp) {
      Thread.sleep(10);
      paused = clock.pausedNanos(before, clock.nanoTime());
    }
    assertThat(paused).as("nanoseconds paused")
        .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(100));
  }
}
