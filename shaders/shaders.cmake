# Compiles the GLSL compute shaders to SPIR-V at build time, one variant per set of -D defines
# (weight type, fused mode, reduction style, …) from a single source each, and embeds them in
# the library as uint32_t arrays (shaders/embed_spirv.cmake). Nothing is compiled at run time.
# include()d from backends/CMakeLists.txt only when STATICLM_VULKAN is on; defines the object
# library staticlm_spirv (the generated .cpp), which staticlm_backends links.

set(spv_dir ${CMAKE_CURRENT_BINARY_DIR}/spirv)
file(MAKE_DIRECTORY ${spv_dir})
set(shader_dir ${CMAKE_CURRENT_LIST_DIR})
file(GLOB shader_includes ${shader_dir}/*.glsl)
set(spirv_names "")

# Compiled SPIR-V is kept in a cache shared by every build directory (compile_cached.cmake):
# the sanitizer build and CI's clean clone copy what the Release build compiled. Empty: none.
set(default_spirv_cache "")
if(DEFINED ENV{STATICLM_SPIRV_CACHE})
  set(default_spirv_cache "$ENV{STATICLM_SPIRV_CACHE}")
elseif(DEFINED ENV{HOME})
  set(default_spirv_cache "$ENV{HOME}/.cache/staticlm/spirv")
endif()
set(STATICLM_SPIRV_CACHE "${default_spirv_cache}" CACHE PATH
    "Directory of compiled shader variants shared across builds (empty: no cache)")

# glslc -O (spirv-opt's performance passes) is off by default: it unrolled the matmul variants
# into SPIR-V ten times larger (205 KB instead of 20 KB for one), took ~13 s per variant instead
# of 0.15 s (most of a cold build's time: issue 19) and made the library 9 MB larger, while
# lavapipe ran the model no faster (Gemma 3 prefill 12.3-13.2 tok/s with it, 13.5-13.7 without,
# alternating runs; README, Vulkan). Drivers compile SPIR-V with their own optimizer, which
# honours the shaders' [[unroll]] hints; turn it on for one that is measured to gain from it.
option(STATICLM_SPIRV_OPTIMIZE "Compile shaders with glslc -O (spirv-opt)" OFF)
set(spirv_optimize "")
if(STATICLM_SPIRV_OPTIMIZE)
  set(spirv_optimize -O)
endif()

function(add_shader_variant name source)
  set(out ${spv_dir}/${name}.spv)
  set(defines "")
  foreach(d ${ARGN})
    list(APPEND defines -D${d})
  endforeach()
  if(STATICLM_GLSLC)
    set(cmd ${STATICLM_GLSLC} -fshader-stage=compute --target-env=vulkan1.1 ${spirv_optimize}
        -I ${shader_dir} ${defines} ${shader_dir}/${source})
  else()
    set(cmd ${STATICLM_GLSLANG} -V --target-env vulkan1.1 -S comp -I${shader_dir} ${defines}
        ${shader_dir}/${source})
  endif()
  string(REPLACE ";" "|" joined_cmd "${cmd}")
  string(REPLACE ";" "|" joined_sources "${shader_dir}/${source};${shader_includes}")
  add_custom_command(OUTPUT ${out}
                     COMMAND ${CMAKE_COMMAND} -DCMD=${joined_cmd} -DOUT=${out}
                             -DSOURCES=${joined_sources} -DCACHE_DIR=${STATICLM_SPIRV_CACHE}
                             -P ${shader_dir}/compile_cached.cmake
                     DEPENDS ${shader_dir}/${source} ${shader_includes}
                             ${shader_dir}/compile_cached.cmake
                     COMMENT "SPIR-V ${name}" VERBATIM)
  set(spirv_names ${spirv_names} ${name} PARENT_SCOPE)
endfunction()

# Weight types by their contract/dtype.h value; every one has a unit form
# (shaders/weight_units.glsl). A type listed in weight_types_without_units would get no style-2
# variants (vk_dispatch.cpp would then have to run it with style 0).
set(weight_types f32=0 f16=1 q4_0=2 q4_1=3 q5_0=6 q5_1=7 q8_0=8 q4_k=12 q5_k=13 q6_k=14 bf16=30)
set(weight_types_without_units)
foreach(pair ${weight_types})
  string(REPLACE "=" ";" kv ${pair})
  list(GET kv 0 tname)
  list(GET kv 1 tid)
  add_shader_variant(embed_${tname} embed.comp WTYPE=${tid})
  foreach(mode 0 1 2)
    foreach(style 0 1)
      foreach(rows 1 8)
        add_shader_variant(matmul_${tname}_m${mode}_s${style}_r${rows} matmul.comp
                           WTYPE=${tid} MODE=${mode} STYLE=${style} ROWS=${rows})
      endforeach()
    endforeach()
    # Style 2: style 0 with unit loads and x shared over a subgroup of 8 (CPU devices).
    if(tname IN_LIST weight_types_without_units)
      continue()
    endif()
    foreach(rows 1 8)
      add_shader_variant(matmul_${tname}_m${mode}_s2_r${rows} matmul_units.comp
                         WTYPE=${tid} MODE=${mode} ROWS=${rows})
    endforeach()
  endforeach()
endforeach()
add_shader_variant(rms_norm rms_norm.comp)
add_shader_variant(rope rope.comp)
add_shader_variant(add elementwise.comp OP=0)
add_shader_variant(silu_mul elementwise.comp OP=1)
add_shader_variant(take_last elementwise.comp OP=2)
add_shader_variant(gelu_mul elementwise.comp OP=3)
add_shader_variant(add_bias elementwise.comp OP=4)
# KV cache element types: f32, f16, q8 (Hadamard-rotated int8 with a scale per row), q4 (KIVI:
# nibbles, full-precision rings for the last incomplete group, packed by kv_quantize_q4).
add_shader_variant(kv_quantize_q4 kv_quantize_q4.comp)
# q8's store holds a head in an array: a wider variant for head sizes up to 256.
add_shader_variant(kv_store_q8_hd256 kv_store.comp KV_TYPE=2 HD=256)
foreach(kv f32=0 f16=1 q8=2 q4=3)
  string(REPLACE "=" ";" pair ${kv})
  list(GET pair 0 kname)
  list(GET pair 1 kid)
  add_shader_variant(kv_store_${kname} kv_store.comp KV_TYPE=${kid} HD=128)
  # Head sizes up to 64, 128 and 256 (Gemma 3).
  foreach(hd 64 128 256)
    add_shader_variant(attention_split_${kname}_hd${hd} attention_split.comp KV_TYPE=${kid} HD=${hd})
    # Workgroups of 128 invocations on CPU devices, 64 on GPUs (vk_dispatch.cpp).
    foreach(wg 64 128)
      add_shader_variant(attention_tiled_${kname}_hd${hd}_w${wg} attention_tiled.comp
                         KV_TYPE=${kid} HD=${hd} WG=${wg})
    endforeach()
  endforeach()
endforeach()
add_shader_variant(attention_combine attention_combine.comp)
# Sampling on the device (backends/vulkan/vk_sampling.cpp): greedy argmax and top-k.
add_shader_variant(sample_argmax sample_argmax.comp)
add_shader_variant(sample_topk sample_topk.comp)

set(spv_files "")
foreach(n ${spirv_names})
  list(APPEND spv_files ${spv_dir}/${n}.spv)
endforeach()
set(generated ${CMAKE_CURRENT_BINARY_DIR}/spirv_blobs.cpp)
string(REPLACE ";" "," names_arg "${spirv_names}")
add_custom_command(OUTPUT ${generated}
                   COMMAND ${CMAKE_COMMAND} -DSPV_DIR=${spv_dir} -DNAMES=${names_arg}
                           -DOUT=${generated} -P ${shader_dir}/embed_spirv.cmake
                   DEPENDS ${spv_files} ${shader_dir}/embed_spirv.cmake
                   COMMENT "Embedding SPIR-V modules" VERBATIM)
# A target of its own, depending on nothing: CMake's Ninja generator starts a target's custom
# commands only after every target it links is built, so while the shaders were commands of
# staticlm_backends they waited for the CUDA kernels (matmul.cu alone compiles for ~80 s) with
# one core idle (issue 19: a fresh Release build ran one job at a time for 75 of its 320 s).
add_library(staticlm_spirv OBJECT ${generated})
