package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.cli.OverloadSimulation.Event;
import dev.sluice.cli.OverloadSimulation.Events;
import dev.sluice.cli.OverloadSimulation.Request;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The overload experiment's events come out in the order one heap of every event gives: by time,
 * ties in the order they were added, the first attempts first. Random runs with ties, events at
 * the instant being run, in time order, earlier than it (a retry sent at a deadline already
 * past) and later.
 */
class OverloadEventsTest {
  private static final Comparator<Event> ORDER =
      Comparator.comparingLong(Event::at).thenComparingLong(Event::seq);

  @Test
  void eventsComeOutInTheOrderOfOneHeap() {
    Random random = new Random(2026_11_30L);
    for (int run = 0; run < 200; run++) {
      List<Request> first = new ArrayList<>();
      long t = 0;
      for (int i = random.nextInt(50); i > 0; i--) {
        t += random.nextInt(3) * 10L;   // ties too
        first.add(new Request(t, t + 100, 1, 0));
      }
      PriorityQueue<Event> reference = new PriorityQueue<>(ORDER);
      for (int i = 0; i < first.size(); i++) {
        reference.add(new Event(first.get(i).arrival, i, 0, first.get(i)));
      }
      Events events = new Events(first);
      long seq = first.size();
      long now = 0;
      for (int step = 0; step < 300; step++) {
        if (random.nextInt(3) == 0) {
          Event expected = reference.poll();
          Event polled = events.poll();
          assertThat(polled).as("run %d, step %d", run, step).isEqualTo(expected);
          if (polled != null) {
            now = polled.at();
          }
        } else {
          long at = switch (random.nextInt(4)) {
            case 0 -> now;                                  // an answer at once
            case 1 -> now - random.nextInt(50);             // in the past
            case 2 -> now + random.nextInt(5) * 10L;        // soon, often a tie
            default -> now + random.nextInt(1000);
          };
          int kind = 1 + random.nextInt(3);
          Request r = new Request(at, at + 100, 1, 1);
          events.add(at, kind, r);
          reference.add(new Event(at, seq++, kind, r));
        }
      }
      while (!reference.isEmpty()) {
        assertThat(events.poll()).as("run %d, draining", run).isEqualTo(reference.poll());
      }
      assertThat(events.poll()).isNull();
    }
  }

  @Test
  void firstAttemptsOutOfOrder_areRefused_namingThem() {
    List<Request> first = List.of(new Request(20, 120, 1, 0), new Request(10, 110, 1, 0));
    assertThatThrownBy(() -> new Events(first)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("first attempts must be in time order, but number 1 arrives at 10 ns, before"
            + " 20 ns");
  }
}
