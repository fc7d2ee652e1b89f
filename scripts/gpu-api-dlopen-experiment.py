#!/usr/bin/env python3
"""Experiment for issue 15: is loading libvulkan.so.1 / libOpenCL.so.1 in
process (as NVML is) faster than spawning `vulkaninfo --summary` /
`clinfo --raw`? Measures, in one process, the time from dlopen to the
device list through each API, and the whole-process time of each tool, with
a fresh XDG_CACHE_HOME and POCL_CACHE_DIR for every cold run.

Each API measurement runs in a fresh child interpreter (so dlopen really
loads the library); the child's own interpreter start-up is excluded.
Usage: scripts/gpu-api-dlopen-experiment.py [runs]
"""
import ctypes, os, statistics, subprocess, sys, tempfile, time

VK_CHILD = r'''
import ctypes, time
t0 = time.perf_counter()
vk = ctypes.CDLL("libvulkan.so.1")
class CI(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int), ("pNext", ctypes.c_void_p), ("flags", ctypes.c_uint32),
                ("pApplicationInfo", ctypes.c_void_p), ("enabledLayerCount", ctypes.c_uint32),
                ("ppEnabledLayerNames", ctypes.c_void_p), ("enabledExtensionCount", ctypes.c_uint32),
                ("ppEnabledExtensionNames", ctypes.c_void_p)]
ci = CI(1, None, 0, None, 0, None, 0, None)
inst = ctypes.c_void_p()
assert vk.vkCreateInstance(ctypes.byref(ci), None, ctypes.byref(inst)) == 0
n = ctypes.c_uint32(0)
vk.vkEnumeratePhysicalDevices(inst, ctypes.byref(n), None)
pds = (ctypes.c_void_p * n.value)()
vk.vkEnumeratePhysicalDevices(inst, ctypes.byref(n), pds)
names = []
for pd in pds:
    props = ctypes.create_string_buffer(4096)
    vk.vkGetPhysicalDeviceProperties(ctypes.c_void_p(pd), props)
    mem = ctypes.create_string_buffer(4096)
    vk.vkGetPhysicalDeviceMemoryProperties(ctypes.c_void_p(pd), mem)
    names.append(props.raw[20:276].split(b"\0")[0].decode())
vk.vkDestroyInstance(inst, None)
print((time.perf_counter() - t0) * 1e3, names)
'''

CL_CHILD = r'''
import ctypes, time
t0 = time.perf_counter()
cl = ctypes.CDLL("libOpenCL.so.1")
n = ctypes.c_uint32(0)
cl.clGetPlatformIDs(0, None, ctypes.byref(n))
plats = (ctypes.c_void_p * n.value)()
cl.clGetPlatformIDs(n.value, plats, None)
names = []
for p in plats:
    m = ctypes.c_uint32(0)
    cl.clGetDeviceIDs(ctypes.c_void_p(p), ctypes.c_uint64(0xFFFFFFFF), 0, None, ctypes.byref(m))
    devs = (ctypes.c_void_p * m.value)()
    cl.clGetDeviceIDs(ctypes.c_void_p(p), ctypes.c_uint64(0xFFFFFFFF), m.value, devs, None)
    for d in devs:
        buf = ctypes.create_string_buffer(1024)
        cl.clGetDeviceInfo(ctypes.c_void_p(d), 0x102B, 1024, buf, None)  # CL_DEVICE_NAME
        mem = ctypes.c_uint64(0)
        cl.clGetDeviceInfo(ctypes.c_void_p(d), 0x101F, 8, ctypes.byref(mem), None)  # GLOBAL_MEM_SIZE
        names.append((buf.value.decode(), mem.value))
print((time.perf_counter() - t0) * 1e3, names)
'''

def fresh_env():
    d = tempfile.mkdtemp(prefix="gpuapi-")
    env = dict(os.environ, XDG_CACHE_HOME=d, POCL_CACHE_DIR=os.path.join(d, "pocl"))
    return env

def api(code, env):
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    ms, rest = out.stdout.split(" ", 1)
    return float(ms), rest.strip()

def tool(argv, env):
    t = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=False)
    return (time.perf_counter() - t) * 1e3

def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    res = {k: [] for k in ["vk_api_cold", "vk_tool_cold", "cl_api_cold", "cl_tool_cold",
                           "vk_api_warm", "vk_tool_warm", "cl_api_warm", "cl_tool_warm"]}
    warm = fresh_env()
    api(CL_CHILD, warm); tool(["clinfo", "--raw"], warm)  # fill the warm caches
    seen = {}
    for _ in range(runs):
        for kind, env in (("cold", None), ("warm", warm)):
            e = fresh_env() if env is None else env
            ms, seen["vk"] = api(VK_CHILD, e); res[f"vk_api_{kind}"].append(ms)
            e = fresh_env() if env is None else env
            res[f"vk_tool_{kind}"].append(tool(["vulkaninfo", "--summary"], e))
            e = fresh_env() if env is None else env
            ms, seen["cl"] = api(CL_CHILD, e); res[f"cl_api_{kind}"].append(ms)
            e = fresh_env() if env is None else env
            res[f"cl_tool_{kind}"].append(tool(["clinfo", "--raw"], e))
    print(f"devices: vulkan {seen['vk']}; opencl {seen['cl']}")
    for k, v in res.items():
        print(f"{k:14} median {statistics.median(v):7.1f} ms  (min {min(v):.1f}, max {max(v):.1f}, n={len(v)})")

main()
