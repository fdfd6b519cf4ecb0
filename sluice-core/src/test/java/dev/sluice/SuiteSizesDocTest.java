package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The README's sentence on the suite's two sizes ({@code mvn verify} and
 * {@code mvn verify -Pthorough}) and on how Maven schedules the modules, against the root
 * {@code pom.xml} and {@code .mvn/}: the ratios it names are the ones the build sets, and every
 * size the thorough profile raises reaches the tests.
 */
class SuiteSizesDocTest {
  private static final Pattern PROPERTY =
      Pattern.compile("<(sluice\\.[a-z.]+)>([0-9]+)</\\1>");
  private static final String[] WORDS =
      {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"};

  /** The root pom, read once for the class. */
  private final String pom = read("pom.xml");

  private static String read(String path) {
    try {
      return Files.readString(DocPages.ROOT.resolve(path));
    } catch (IOException e) {
      throw new UncheckedIOException("could not read " + path, e);
    }
  }

  private static String readme() throws IOException {
    return Files.readString(DocPages.ROOT.resolve("README.md")).replaceAll("\\s+", " ");
  }

  /** The numeric sluice.* properties of a block of the pom, in order. */
  private static Map<String, Long> sizes(String block) {
    Map<String, Long> sizes = new LinkedHashMap<>();
    Matcher m = PROPERTY.matcher(block);
    while (m.find()) {
      sizes.put(m.group(1), Long.parseLong(m.group(2)));
    }
    return sizes;
  }

  private Map<String, Long> defaults() {
    return sizes(pom.substring(pom.indexOf("<properties>"), pom.indexOf("</properties>")));
  }

  private Map<String, Long> thorough() {
    String profile = pom.substring(pom.indexOf("<id>thorough</id>"));
    return sizes(profile.substring(0, profile.indexOf("</profile>")));
  }

  private static String times(Map<String, Long> defaults, Map<String, Long> thorough,
      String property) {
    long small = defaults.get(property);
    long large = thorough.get(property);
    assertThat(large % small).as("%s: %d is a whole multiple of %d", property, large, small)
        .isZero();
    return WORDS[(int) (large / small)] + " times";
  }

  @Test
  void theThoroughSizes_areTheRatiosTheReadmeNames() throws IOException {
    Map<String, Long> defaults = defaults();
    Map<String, Long> thorough = thorough();
    assertThat(thorough.keySet()).as("what -Pthorough raises").containsExactlyInAnyOrder(
        "sluice.test.operations", "sluice.lincheck.iterations", "sluice.lincheck.invocations",
        "sluice.lincheck.stress.invocations", "sluice.faults.seconds", "sluice.golden.vectors");
    String readme = readme();
    assertThat(readme).contains("Lincheck trying "
        + times(defaults, thorough, "sluice.lincheck.iterations")
        + " the scenarios and exploring "
        + times(defaults, thorough, "sluice.lincheck.invocations")
        + " the interleavings of each (model checking) and "
        + times(defaults, thorough, "sluice.lincheck.stress.invocations")
        + " the runs (stress)");
    assertThat(readme).contains("the conformance suites' stress phases "
        + times(defaults, thorough, "sluice.test.operations") + " the operations");
    assertThat(readme).contains("the stores replaying "
        + times(defaults, thorough, "sluice.golden.vectors") + " the golden vectors");
    assertThat(readme).contains("the permit fault tests' load across JVMs "
        + thorough.get("sluice.faults.seconds") + " s long instead of "
        + defaults.get("sluice.faults.seconds"));
  }

  @Test
  void everySizeTheProfileRaises_reachesTheTests() {
    String surefire = pom.substring(pom.indexOf("<systemPropertyVariables>"),
        pom.indexOf("</systemPropertyVariables>"));
    for (String property : thorough().keySet()) {
      assertThat(surefire).as("surefire passes %s to the tests", property)
          .contains("<" + property + ">${" + property + "}</" + property + ">");
    }
  }

  @Test
  void mavenBuildsTwoModulesAtATime_theLongestChainFirst() throws IOException {
    String config = Files.readString(DocPages.ROOT.resolve(".mvn/maven.config")).trim();
    assertThat(readme()).contains("(`" + config + "` in `.mvn/maven.config`");
    assertThat(config).isEqualTo("-T 2 -b smart");
    assertThat(Files.readString(DocPages.ROOT.resolve(".mvn/extensions.xml")))
        .contains("<artifactId>takari-smart-builder</artifactId>");
  }
}
