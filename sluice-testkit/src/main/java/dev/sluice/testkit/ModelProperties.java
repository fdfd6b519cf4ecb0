package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Algorithm;
import dev.sluice.Decision;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

/**
 * Model-based property tests: random limits, random sequences of operations, costs and clock
 * steps (backwards too), run against the store and the {@link ReferenceModel}; every decision
 * must agree field by field. A store module extends this class and supplies {@link #factory()}.
 *
 * <p>Parameters are drawn so that every cost is a whole number of microseconds of leak time
 * (rates that divide a second, costs in quarters), where the model and the store are both exact.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public abstract class ModelProperties {
  /** For a store's test class, which extends this one. */
  protected ModelProperties() {}


  /** The store under test. */
  protected abstract LimiterFactory factory();

  /** One step of a scenario. */
  public record Step(String op, String key, double cost, long nanos) {
    @Override
    public String toString() {
      return op.equals("advance") || op.equals("back") ? op + " " + nanos + "ns"
          : op + "(" + key + ", " + cost + ")";
    }
  }

  /** Limits and the steps run against them. */
  public record Scenario(List<Limit> limits, List<Step> steps) {}

  @Property(tries = 300)
  public void store_agreesWithModel_decisionByDecision(@ForAll("scenarios") Scenario scenario) {
    run(scenario);
  }

  @Property(tries = 100)
  public void store_agreesWithModel_severalLimits(@ForAll("multiLimitScenarios") Scenario scenario) {
    run(scenario);
  }

  private void run(Scenario scenario) {
    ManualClock clock = new ManualClock(1_000_000_000L);
    RateLimiter store = factory().create(clock, scenario.limits());
    ReferenceModel model = new ReferenceModel(scenario.limits(), factory().ticksPerSecond());
    int i = 0;
    for (Step step : scenario.steps()) {
      i++;
      long now = clock.nanoTime();
      ModelDecision expected;
      Decision actual;
      switch (step.op()) {
        case "advance":
          clock.advanceNanos(step.nanos());
          continue;
        case "back":
          clock.set(Math.max(0, now - step.nanos()));
          continue;
        case "reset":
          store.reset(step.key());
          model.reset(step.key());
          continue;
        case "tryAcquire":
          actual = store.tryAcquire(step.key(), step.cost());
          expected = model.tryAcquire(step.key(), step.cost(), now);
          break;
        case "check":
          actual = store.check(step.key(), step.cost());
          expected = model.check(step.key(), step.cost(), now);
          break;
        case "fillUp":
          actual = store.fillUp(step.key(), step.cost());
          expected = model.fillUp(step.key(), step.cost(), now);
          break;
        case "reserve":
          actual = store.reserve(step.key(), step.cost());
          expected = model.reserve(step.key(), step.cost(), now);
          break;
        default:
          throw new AssertionError(step.op());
      }
      assertThat(ModelDecision.of(actual)).as("step %s: %s at %sns", i, step, now).isEqualTo(expected);
    }
  }

  @Provide
  Arbitrary<Scenario> scenarios() {
    return limit().list().ofSize(1).flatMap(ls -> steps(ls).map(st -> new Scenario(ls, st)));
  }

  @Provide
  Arbitrary<Scenario> multiLimitScenarios() {
    return limit().list().ofMinSize(2).ofMaxSize(3)
        .flatMap(ls -> steps(ls).map(st -> new Scenario(ls, st)));
  }

  static Arbitrary<Limit> limit() {
    Arbitrary<Rate> rates = Arbitraries.oneOf(
        Arbitraries.of(1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 1000).map(Rate::perSecond),
        Arbitraries.of(2, 10, 60).map(s -> Rate.of(1, Duration.ofSeconds(s))));
    Arbitrary<Double> capacity = Arbitraries.integers().between(1, 80).map(q -> q * 0.25);
    Arbitrary<Duration> window = Arbitraries.of(Duration.ofMillis(250), Duration.ofSeconds(1),
        Duration.ofSeconds(10), Duration.ofMillis(1_500));
    Arbitrary<Duration> penalty = Arbitraries.of(Duration.ZERO, Duration.ZERO, Duration.ZERO,
        Duration.ofSeconds(1), Duration.ofMillis(2_500));
    Arbitrary<Algorithm> algorithm = Arbitraries.of(Algorithm.class);
    return Combinators.combine(algorithm, rates, capacity, window, penalty)
        .as((a, r, c, w, p) -> {
          Limit l;
          switch (a) {
            case LEAKY_BUCKET: l = Limit.leakyBucket(c, r); break;
            case TOKEN_BUCKET: l = Limit.tokenBucket(c, r); break;
            case GCRA: l = Limit.gcra(r, c); break;
            case FIXED_WINDOW: l = Limit.fixedWindow(c, w); break;
            default: l = Limit.slidingWindow(c, w);
          }
          return ReferenceModel.modelsPenalty(a) ? l.withPenalty(p) : l;
        });
  }

  static Arbitrary<List<Step>> steps(List<Limit> limits) {
    List<String> ops = new ArrayList<>(List.of("tryAcquire", "tryAcquire", "tryAcquire", "check",
        "fillUp", "advance", "advance", "advance", "reset", "back"));
    if (ReferenceModel.canReserve(limits)) {
      ops.add("reserve");
      ops.add("reserve");
    }
    Arbitrary<String> op = Arbitraries.of(ops);
    Arbitrary<String> key = Arbitraries.of("a", "b", "c");
    Arbitrary<Double> cost = Arbitraries.frequencyOf(
        Tuple.of(9, Arbitraries.integers().between(1, 16).map(q -> q * 0.25)),
        Tuple.of(1, Arbitraries.integers().between(1, 400).map(q -> q * 0.25)));
    Arbitrary<Long> micros = Arbitraries.frequencyOf(
        Tuple.of(5, Arbitraries.longs().between(1, 1_000_000)),
        Tuple.of(3, Arbitraries.longs().between(1, 20_000)),
        Tuple.of(2, Arbitraries.longs().between(1_000_000, 30_000_000)));
    return Combinators.combine(op, key, cost, micros)
        .as((o, k, c, m) -> new Step(o, k, c, m * 1000))
        .list().ofMinSize(1).ofMaxSize(60);
  }
}
