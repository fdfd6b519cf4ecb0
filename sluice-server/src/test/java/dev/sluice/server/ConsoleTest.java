package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The console's history: five minutes at a sample a second, oldest first, never more. */
class ConsoleTest {
  @Test
  void aSeries_keepsTheLast300Samples_oldestFirst() {
    Console.Ring r = new Console.Ring();
    for (int i = 1; i <= 299; i++) {
      r.add(i);
    }
    assertThat(r.size()).isEqualTo(299);
    assertThat(r.get(0)).isEqualTo(1);
    for (int i = 300; i <= 1000; i++) {
      r.add(i);
    }
    assertThat(Console.SAMPLES).isEqualTo(300);
    assertThat(r.size()).isEqualTo(300);
    assertThat(r.get(0)).as("the oldest kept").isEqualTo(701);
    assertThat(r.get(299)).isEqualTo(1000);
    assertThat(r.last()).isEqualTo(1000);
  }
}
