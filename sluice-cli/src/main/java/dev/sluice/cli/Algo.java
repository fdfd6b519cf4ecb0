package dev.sluice.cli;

import dev.sluice.Limit;
import dev.sluice.Rate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The algorithms a simulation compares, all built from one rate and one capacity. */
enum Algo {
  LEAKY_METER("leaky-meter"),
  LEAKY_QUEUE("leaky-queue"),
  TOKEN_BUCKET("token-bucket"),
  GCRA("gcra"),
  FIXED_WINDOW("fixed-window"),
  SLIDING_WINDOW("sliding-window");

  final String id;

  Algo(String id) {
    this.id = id;
  }

  /**
   * The limit with this rate (per second) and capacity. Windows count {@code capacity} per
   * window of {@code capacity / rate}, so that every algorithm has the same long-run rate.
   */
  Limit limit(double rate, double capacity) {
    Rate r = Rate.perSecond(rate);
    switch (this) {
      case LEAKY_METER:
      case LEAKY_QUEUE:
        return Limit.leakyBucket(capacity, r);
      case TOKEN_BUCKET:
        return Limit.tokenBucket(capacity, r);
      case GCRA:
        return Limit.gcra(r, capacity);
      case FIXED_WINDOW:
        return Limit.fixedWindow(capacity, window(rate, capacity));
      default:
        return Limit.slidingWindow(capacity, window(rate, capacity));
    }
  }

  private static Duration window(double rate, double capacity) {
    return Duration.ofNanos(Math.max(1000, Math.round(capacity / rate * 1e9)));
  }

  static List<Algo> parseList(String list) {
    List<Algo> out = new ArrayList<>();
    for (String part : list.split(",", -1)) {
      String id = part.strip().toLowerCase(Locale.ROOT);
      if (id.equals("all")) {
        return List.of(values());
      }
      Algo found = null;
      for (Algo a : values()) {
        if (a.id.equals(id)) {
          found = a;
        }
      }
      if (found == null) {
        throw new InputException("unknown algorithm '" + part.strip() + "'; expected all or a list of "
            + "leaky-meter, leaky-queue, token-bucket, gcra, fixed-window, sliding-window");
      }
      if (!out.contains(found)) {
        out.add(found);
      }
    }
    return out;
  }
}
