"""tfdoctor's own list of TF_XLA_FLAGS names, apart from derive/xla_flags.py so that
derive/release_knowledge.py can read it without an import cycle (xla_flags reads release_knowledge)."""

from __future__ import annotations

# Flags of tensorflow/compiler/jit/flags.cc across TF 2.x (auto-jit, clustering, XLA devices, MLIR
# bridge). Unknown tf_ flags that are close to one of these are reported as misspelt.
TF_XLA_KNOWN = frozenset({
    "tf_xla_auto_jit", "tf_xla_min_cluster_size", "tf_xla_max_cluster_size", "tf_xla_cluster_exclude_ops",
    "tf_xla_clustering_debug", "tf_xla_clustering_fuel", "tf_xla_cpu_global_jit", "tf_xla_enable_xla_devices",
    "tf_xla_disable_deadness_safety_checks_for_debugging",
    "tf_xla_disable_resource_variable_safety_checks_for_debugging", "tf_xla_deterministic_cluster_names",
    "tf_xla_persistent_cache_directory", "tf_xla_persistent_cache_device_types",
    "tf_xla_persistent_cache_read_only", "tf_xla_persistent_cache_prefix",
    "tf_xla_disable_strict_signature_checks", "tf_xla_enable_lazy_compilation", "tf_xla_compile_on_demand",
    "tf_xla_async_compilation", "tf_xla_always_defer_compilation", "tf_xla_check_cluster_input_numerics",
    "tf_xla_check_cluster_output_numerics", "tf_xla_use_device_api", "tf_xla_use_device_api_for_xla_launch",
    "tf_xla_use_device_api_for_compile_on_demand", "tf_xla_use_device_api_for_auto_jit",
    "tf_xla_enable_device_api_for_gpu", "tf_xla_ops_to_cluster", "tf_xla_annotate_cluster_id",
    "tf_xla_cluster_parallel", "tf_xla_sparse_core_disable_table_stacking",
    "tf_xla_sparse_core_minibatch_max_division_level", "tf_xla_sparse_core_stacking_mem_limit_bytes",
    "tf_xla_sparse_core_stacking_table_shard_limit_bytes", "tf_mlir_enable_mlir_bridge",
    "tf_mlir_enable_merge_control_flow_pass", "tf_mlir_enable_convert_control_to_data_outputs_pass",
    "tf_mlir_enable_strict_clusters", "tf_mlir_enable_generic_outside_compilation",
    "tf_mlir_enable_tpu_variable_runtime_reformatting_pass", "tf_mlir_enable_multiple_local_cpu_devices",
    "tf_dump_graphs_in_tfg", "tf_introduce_floating_point_jitter_to_tensors",
    "tf_introduce_floating_point_jitter_amount",
})
