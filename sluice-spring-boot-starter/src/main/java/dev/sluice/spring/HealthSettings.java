package dev.sluice.spring;

import dev.sluice.concurrency.Priority;
import dev.sluice.health.HealthShedder;
import dev.sluice.health.HealthSignal;
import dev.sluice.health.Signals;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Supplier;

/**
 * {@code sluice.health}, checked: every mistake named with its property, and the shedder the
 * filters ask. A signal is a built-in one by its name or a {@link HealthSignal} bean of the
 * application by its {@code name()}.
 */
final class HealthSettings {
  private static final Map<String, Supplier<HealthSignal>> BUILT_IN = Map.of(
      "container-cpu", Signals::containerCpu, "process-cpu", Signals::processCpu,
      "cpu-pressure", Signals::cpuPressure, "gc", Signals::gcTimeShare,
      "heap", Signals::heapAfterGc);

  private HealthSettings() {}

  /**
   * The shedder of {@code h}, or null when no signal is named; {@code beans} are the
   * application's own signals by name.
   *
   * @throws SluiceConfigurationException naming every problem
   */
  static HealthShedder shedder(SluiceProperties.Health h, Map<String, HealthSignal> beans) {
    return shedder(h, beans, Map.of());
  }

  /**
   * The same, with the built-in signals that read the application's pools ({@code hikari},
   * {@code web-server}: {@link PoolSignals}) by name.
   */
  static HealthShedder shedder(SluiceProperties.Health h, Map<String, HealthSignal> beans,
      Map<String, Supplier<HealthSignal>> pools) {
    if (h.getSignals().isEmpty()) {
      return null;
    }
    List<String> problems = new ArrayList<>();
    HealthShedder.Builder b = HealthShedder.builder().guard(h.isGuard())
        .shedCritical(h.isShedCritical());
    if (h.getHysteresis() != null) {
      try {
        b.hysteresis(h.getHysteresis());
      } catch (IllegalArgumentException e) {
        problems.add("sluice.health.hysteresis: " + e.getMessage());
      }
    }
    Duration every = h.getSampleEvery();
    if (every != null) {
      try {
        b.sampleEvery(every);
      } catch (IllegalArgumentException e) {
        problems.add("sluice.health.sample-every: " + e.getMessage());
      }
    }
    if (h.getPriorityHeader() == null || h.getPriorityHeader().isBlank()) {
      problems.add("sluice.health.priority-header: must name a header but was '"
          + h.getPriorityHeader() + "'");
    }
    for (int i = 0; i < h.getSignals().size(); i++) {
      String at = "sluice.health.signals[" + i + "]";
      SluiceProperties.HealthBand band = h.getSignals().get(i);
      HealthSignal signal = signal(at, band.getSignal(), beans, pools, problems);
      if (band.getStart() == null || band.getFull() == null) {
        problems.add(at + ": needs start and full (where shedding starts, and where all but"
            + " critical work is shed)");
        continue;
      }
      if (signal != null) {
        try {
          b.signal(signal, band.getStart(), band.getFull());
        } catch (IllegalArgumentException e) {
          problems.add(at + ": " + e.getMessage());
        }
      }
    }
    if (!problems.isEmpty()) {
      throw new SluiceConfigurationException(problems);
    }
    return b.build();
  }

  /**
   * The shedder's meters: {@code sluice.health.signal} (a gauge per signal, its last value),
   * {@code sluice.health.pressure}, and {@code sluice.health.shed} (refusals, per priority).
   */
  static void bind(HealthShedder shedder, MeterRegistry meters) {
    List<HealthShedder.SignalValue> signals = shedder.signals();
    for (int i = 0; i < signals.size(); i++) {
      int index = i;
      Gauge.builder("sluice.health.signal", shedder, s -> s.signals().get(index).value())
          .tag("signal", signals.get(i).name())
          .description("a health signal's last value").register(meters);
    }
    Gauge.builder("sluice.health.pressure", shedder, HealthShedder::pressure)
        .description("the health shedder's pressure, 0 to 1").register(meters);
    for (Priority p : Priority.values()) {
      FunctionCounter.builder("sluice.health.shed", shedder, s -> s.refused(p))
          .tag("priority", p.name().toLowerCase(Locale.ROOT))
          .description("requests the health shedder refused").register(meters);
    }
  }

  private static HealthSignal signal(String at, String name, Map<String, HealthSignal> beans,
      Map<String, Supplier<HealthSignal>> pools, List<String> problems) {
    if (name == null || name.isBlank()) {
      problems.add(at + ".signal: must name a signal but was '" + name + "'");
      return null;
    }
    Supplier<HealthSignal> builtIn = BUILT_IN.get(name);
    if (builtIn == null) {
      builtIn = pools.get(name);
    }
    if (builtIn != null) {
      return builtIn.get();
    }
    HealthSignal bean = beans.get(name);
    if (bean == null) {
      TreeSet<String> known = new TreeSet<>(BUILT_IN.keySet());
      known.addAll(pools.keySet());
      known.addAll(beans.keySet());
      problems.add(at + ".signal: no signal '" + name + "' (built in, or a HealthSignal bean"
          + " of that name: " + known + ")");
    }
    return bean;
  }
}
