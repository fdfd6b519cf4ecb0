package dev.sluice.server;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;

/**
 * The one YAML loader of the policies file and of Envoy's configuration: duplicate keys refused,
 * aliases capped (a "billion laughs" document is refused, not expanded).
 */
final class YamlLoader {
  private YamlLoader() {}

  static Yaml yaml() {
    LoaderOptions options = new LoaderOptions();
    options.setAllowDuplicateKeys(false);
    options.setMaxAliasesForCollections(10);
    return new Yaml(options);
  }
}
