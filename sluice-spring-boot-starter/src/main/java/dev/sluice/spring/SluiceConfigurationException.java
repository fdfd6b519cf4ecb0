package dev.sluice.spring;

import java.util.List;

/**
 * Sluice's settings in the application's configuration are wrong: every problem found, each
 * naming the property ({@code sluice.policies.api.rate}) and what is wrong with its value. The
 * application does not start; {@link SluiceFailureAnalyzer} prints the problems.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#bad-settings-fail-startup">docs/spring.md, "Bad settings fail startup"</a>.
 */
public class SluiceConfigurationException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final List<String> problems;

  public SluiceConfigurationException(List<String> problems) {
    super("Invalid Sluice configuration:\n  " + String.join("\n  ", problems));
    this.problems = List.copyOf(problems);
  }

  /** Each problem: {@code property: what is wrong}. */
  public List<String> problems() {
    return problems;
  }
}
