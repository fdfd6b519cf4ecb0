package dev.sluice.internal;

import dev.sluice.http.ConcurrencyRuleBuilder;
import dev.sluice.http.RuleBuilder;
import java.util.function.Function;

/**
 * How Sluice's filter modules read a rule builder's checked settings, which the builders keep
 * out of their public API: each builder class installs its reader here when it is initialized (the
 * JDK's "shared secrets" pattern, as {@link EngineAccess}). A builder exists only after its class
 * is initialized, so the reader is always installed when a builder is passed in. Not API.
 */
public final class RuleAccess {
  private static volatile Function<RuleBuilder<?, ?, ?>, RuleSettings<?, ?>> rules;
  private static volatile Function<ConcurrencyRuleBuilder<?, ?, ?>, ConcurrencyRuleSettings<?, ?>>
      concurrencyRules;

  private RuleAccess() {}

  /** Called once, by {@link RuleBuilder}. */
  public static void installRules(Function<RuleBuilder<?, ?, ?>, RuleSettings<?, ?>> reader) {
    rules = reader;
  }

  /** Called once, by {@link ConcurrencyRuleBuilder}. */
  public static void installConcurrencyRules(
      Function<ConcurrencyRuleBuilder<?, ?, ?>, ConcurrencyRuleSettings<?, ?>> reader) {
    concurrencyRules = reader;
  }

  /**
   * The builder's settings, checked.
   *
   * @throws NullPointerException if no limiter was set
   * @throws IllegalArgumentException if queue mode meets a window limit
   */
  @SuppressWarnings("unchecked")
  public static <Q, K> RuleSettings<Q, K> settings(RuleBuilder<Q, K, ?> builder) {
    return (RuleSettings<Q, K>) rules.apply(builder);
  }

  /**
   * The builder's settings, checked.
   *
   * @throws IllegalStateException if the limiter or the scope is missing
   */
  @SuppressWarnings("unchecked")
  public static <Q, K> ConcurrencyRuleSettings<Q, K> settings(
      ConcurrencyRuleBuilder<Q, K, ?> builder) {
    return (ConcurrencyRuleSettings<Q, K>) concurrencyRules.apply(builder);
  }
}
