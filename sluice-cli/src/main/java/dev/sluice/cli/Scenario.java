package dev.sluice.cli;

import java.util.Locale;

/** Named traffic, with the rate and capacity the scenario is about. */
enum Scenario {
  SEED000("at 1s, at 1.7s cost 2, at 2s, at 2.3s cost 2, at 6s cost 3", 1.5, 3, Simulation.Op.FILL,
      "seed 000's plot: capacity 3, leak 1.5/s, fill-ups at 1, 1.7, 2, 2.3 and 6 s"),
  BURST("idle 5s, 200 in 100ms", 100, 200, Simulation.Op.TRY,
      "seed 002: 200 requests in 100 ms after 5 s idle, r=100/s, C=200"),
  SUSTAINED("300/s for 2s", 100, 200, Simulation.Op.TRY,
      "seed 002: a sustained 3x overload, 300/s for 2 s, r=100/s, C=200"),
  STEP("50/s for 2s, 300/s for 2s, 50/s for 2s", 100, 200, Simulation.Op.TRY,
      "half the rate, then 3x for 2 s, then half again"),
  POISSON("150/s for 10s poisson", 100, 50, Simulation.Op.TRY,
      "random arrivals at 1.5x the rate"),
  SEED003("10 in 1ms, at 220877us, at 457641us, at 1s", 1, 10, Simulation.Op.TRY,
      "seed 003: 10 per 10 s; the 11th call waits for the next drip");

  final String spec;
  final double rate;
  final double capacity;
  final Simulation.Op op;
  final String description;

  Scenario(String spec, double rate, double capacity, Simulation.Op op, String description) {
    this.spec = spec;
    this.rate = rate;
    this.capacity = capacity;
    this.op = op;
    this.description = description;
  }

  String id() {
    return name().toLowerCase(Locale.ROOT);
  }

  static Scenario of(String name) {
    for (Scenario s : values()) {
      if (s.id().equals(name.toLowerCase(Locale.ROOT))) {
        return s;
      }
    }
    StringBuilder known = new StringBuilder();
    for (Scenario s : values()) {
      known.append(known.length() == 0 ? "" : ", ").append(s.id());
    }
    if (name.equals("market-open")) {
      throw new InputException("market-open is a fleet of gateways, not one key's traffic: run"
          + " sluice fleet (--plot FILE draws it)");
    }
    throw new InputException("unknown scenario '" + name + "'; expected one of " + known);
  }
}
