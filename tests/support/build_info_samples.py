"""build_info.py as TensorFlow's generator (tensorflow/tools/build_info/gen_build_info.py) writes it, in the
shapes of its releases: the samples pyenv_snapshot's reader must read as `ast` does."""

from support.fake_site_packages import BUILD_INFO_CPU, BUILD_INFO_CUDA

LICENSE = """
# Copyright 2020 The TensorFlow Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# ==============================================================================
"""
# The files as TensorFlow's gen_build_info.py writes them, byte for byte in their shape.
GENERATED = {
    "2.21-cpu": LICENSE + '"""Auto-generated module providing information about the build."""\nimport collections\n\n'
    "build_info = collections.OrderedDict([('is_cuda_build', False), ('is_rocm_build', False), "
    "('is_tensorrt_build', False)])\n",
    "2.21-cuda": LICENSE + '"""Auto-generated module providing information about the build."""\nimport collections\n\n'
    "build_info = collections.OrderedDict([('cpu_compiler', '/usr/lib/llvm-18/bin/clang'), "
    "('cuda_compute_capabilities', ['sm_60', 'sm_70', 'sm_80', 'sm_89', 'compute_90']), ('cuda_version', '12.5.1'), "
    "('cudnn_version', '9'), ('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', False)])\n",
    "2.3-windows-cuda": LICENSE + '"""Auto-generated module providing information about the build."""\n'
    "from __future__ import absolute_import\nfrom __future__ import division\nfrom __future__ import print_function\n\n"
    "import collections\n\nbuild_info = collections.OrderedDict([('cuda_version', '64_101'), "
    "('cudart_dll_name', 'cudart64_101.dll'), ('cudnn_version', '64_7'), ('cudnn_dll_name', 'cudnn64_7.dll'), "
    "('is_cuda_build', True), ('is_rocm_build', False), ('msvcp_dll_names', 'msvcp140.dll,msvcp140_1.dll'), "
    "('nvcuda_dll_name', 'nvcuda.dll')])\r\n",
    "dict-call": "import collections\n\nbuild_info = dict([('is_cuda_build', True), ('cuda_version', '11.2'), "
    "('cuda_compute_capabilities', ('sm_35', 'sm_50')), ('cudnn_version', '8')])\n",
    "1.x-constants": LICENSE.replace("2020", "2017")
    + '"""Generates a Python module containing information about the build."""\n'
    "from __future__ import absolute_import\nfrom __future__ import division\nfrom __future__ import print_function\n"
    "\nis_cuda_build = True\n"
    "cuda_version_number = '10.0'\ncudnn_version_number = '7'\nmsvcp_dll_name = 'msvcp140.dll'\n"
    "nvcuda_dll_name = 'nvcuda.dll'\ncudart_dll_name = 'cudart64_100.dll'\ncudnn_dll_name = 'cudnn64_7.dll'\n",
    "fixture-cpu": BUILD_INFO_CPU,
    "fixture-cuda": BUILD_INFO_CUDA,
    "gpu-scenario": "import collections\nbuild_info = collections.OrderedDict("
    + repr(sorted({"is_cuda_build": True, "is_rocm_build": False, "is_tensorrt_build": False, "cuda_version": "12.2",
                   "cudnn_version": "8", "cuda_compute_capabilities": ["sm_50", "sm_60", "compute_90"]}.items()))
    + ")\n",
    "numbers-and-nesting": "x = {'a': (1, 2.5, .5, 5., 00), 'b': [[], (), {}], 'c': None}  # trailing\n"
                           "y = ((1,),)\nz = (1)\n",
}
