package dev.sluice.concurrency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * docs/concurrency.md's Java: its first example is the code below (between the markers), run
 * for each of its three ends, and every block imports the Sluice types it names (issue 44, item
 * 7).
 */
class ConcurrencyDocTest {
  private static final Path DOC = Path.of("../docs/concurrency.md");

  private final ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(10).build();
  private String end = "success";

  record Rows(int n) {}

  private Rows query() throws TimeoutException {
    switch (end) {
      case "timeout" -> throw new TimeoutException("the database took too long");
      case "bug" -> throw new IllegalStateException("a bug in the caller");
      default -> {
        return new Rows(3);
      }
    }
  }

  private static Rows overloaded(Refusal why, int inFlight, int limit) {
    return new Rows(-1);
  }

  private Rows firstExample() throws TimeoutException {
    // docs:begin
    Acquisition a = db.tryAcquire("orders-db");          // answers at once
    if (!a.isAcquired()) {
      return overloaded(a.refusal(), a.inFlight(), a.limit());
    }
    Permit p = a.permit();
    try {
      Rows rows = query();
      p.release(Outcome.SUCCESS);                        // the backend answered
      return rows;
    } catch (TimeoutException e) {
      p.release(Outcome.DROPPED);                        // too slow: an adaptive limit learns of it
      throw e;
    } finally {
      p.release(Outcome.IGNORED);                        // any other end says nothing of the backend
    }                                                    // (a permit ends once: no-op if released above)
    // docs:end
  }

  @Test
  void theFirstExample_isTheCodeHere() throws IOException {
    String source = Files.readString(
        Path.of("src/test/java/dev/sluice/concurrency/ConcurrencyDocTest.java"));
    String snippet = source.substring(source.indexOf("    // docs:begin\n") + 18,
        source.indexOf("    // docs:end"));
    String dedented = snippet.lines().map(l -> l.length() >= 4 ? l.substring(4) : l)
        .collect(Collectors.joining("\n"));
    String block = javaBlocks().get(0);
    assertThat(block).contains("ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(10)"
        + ".build();\n\n" + dedented + "\n");
  }

  @Test
  void theFirstExample_tellsEachEnd() throws Exception {
    assertThat(firstExample()).isEqualTo(new Rows(3));
    end = "timeout";
    assertThatThrownBy(this::firstExample).isInstanceOf(TimeoutException.class);
    end = "bug";
    assertThatThrownBy(this::firstExample).isInstanceOf(IllegalStateException.class);
    ConcurrencyStats s = db.stats();
    assertThat(s.ended(Outcome.SUCCESS)).as("the query answered").isEqualTo(1);
    assertThat(s.ended(Outcome.DROPPED)).as("the query timed out").isEqualTo(1);
    assertThat(s.ended(Outcome.IGNORED)).as("the caller failed").isEqualTo(1);
    assertThat(s.inFlight()).isZero();
  }

  /** Every Java block imports each Sluice type (and java.time's Duration) it names. */
  @Test
  void everyBlock_importsTheSluiceTypesItNames() throws IOException {
    Pattern type = Pattern.compile("\\b([A-Z][A-Za-z]+)\\b");
    List<String> missing = new ArrayList<>();
    int n = 0;
    for (String block : javaBlocks()) {
      n++;
      String code = block.lines().filter(l -> !l.startsWith("import "))
          .map(l -> l.replaceAll("//.*", "")).collect(Collectors.joining("\n"));
      Matcher m = type.matcher(code);
      while (m.find()) {
        String name = m.group(1);
        String qualified = qualified(name);
        if (qualified != null && !block.contains("import " + qualified + ";")
            && !missing.contains(n + ": " + qualified)) {
          missing.add(n + ": " + qualified);
        }
      }
    }
    assertThat(n).isGreaterThanOrEqualTo(9);
    assertThat(missing).as("imports missing, by block").isEmpty();
  }

  /** The type's qualified name if it is one of Sluice's (or java.time's Duration), else null. */
  private static String qualified(String name) {
    for (String pkg : List.of("dev.sluice.concurrency.", "dev.sluice.", "java.time.")) {
      try {
        Class.forName(pkg + name, false, ConcurrencyDocTest.class.getClassLoader());
        return pkg + name;
      } catch (ClassNotFoundException e) {
        // another package
      }
    }
    return null;
  }

  private static List<String> javaBlocks() throws IOException {
    List<String> blocks = new ArrayList<>();
    StringBuilder b = null;
    for (String line : Files.readAllLines(DOC)) {
      if (b == null && line.equals("```java")) {
        b = new StringBuilder();
      } else if (b != null && line.equals("```")) {
        blocks.add(b.toString());
        b = null;
      } else if (b != null) {
        b.append(line).append('\n');
      }
    }
    return blocks;
  }
}
