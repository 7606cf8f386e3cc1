-- Runs packaging/cli_filter/cli_filter.lua the way Slurm's cli_filter/lua
-- does (a global `slurm` table; options with a `spank` table per plugin, where
-- an option given without value reads "set") and checks what it sets.
-- Usage: lua5.1 cli_filter_test.lua path/to/cli_filter.lua
slurm = { SUCCESS = 0, ERROR = -1 }
dofile(arg[1])

local failures = 0
local function check(name, got, want)
   if got ~= want then
      io.stderr:write(string.format("FAIL %s: got %s, want %s\n", name, tostring(got), tostring(want)))
      failures = failures + 1
   end
end

-- Slurm's options object: reads of unset options give nil; writes are recorded.
local function options_with(elastic_value, extra)
   local o = { spank = { elastic = { elastic = elastic_value } } }
   for k, v in pairs(extra or {}) do o[k] = v end
   return o
end

for _, f in ipairs({ "slurm_cli_setup_defaults", "slurm_cli_pre_submit", "slurm_cli_post_submit" }) do
   check(f .. " defined (Slurm refuses the script otherwise)", type(_G[f]), "function")
end

local o = options_with("2:8")
check("range rc", slurm_cli_pre_submit(o, 0), slurm.SUCCESS)
check("range nodes", o.nodes, "2-8")
check("range no-kill", o["no-kill"], "set")

o = options_with("4")
slurm_cli_pre_submit(o, 0)
check("N nodes", o.nodes, "4")
check("N no-kill", o["no-kill"], "set")

o = options_with("3:3")
slurm_cli_pre_submit(o, 0)
check("3:3 nodes", o.nodes, "3")

-- Bare --elastic (exactly the step's nodes), off, and malformed values (the
-- plugin reports those) leave the options alone.
for _, v in ipairs({ "set", "off", "8:2", "0:4", "x", "2:", ":3", "-1" }) do
   o = options_with(v, { nodes = "5" })
   check("'" .. v .. "' rc", slurm_cli_pre_submit(o, 0), slurm.SUCCESS)
   check("'" .. v .. "' keeps nodes", o.nodes, "5")
   check("'" .. v .. "' no no-kill", o["no-kill"], nil)
end

-- Without the plugin (or without --elastic) nothing changes.
o = { spank = {} }
slurm_cli_pre_submit(o, 0)
check("no plugin nodes", o.nodes, nil)
o = { spank = { elastic = {} } }
slurm_cli_pre_submit(o, 0)
check("no option nodes", o.nodes, nil)
o = {}
check("no spank table rc", slurm_cli_pre_submit(o, 0), slurm.SUCCESS)

check("setup_defaults rc", slurm_cli_setup_defaults({}, true), slurm.SUCCESS)
check("post_submit rc", slurm_cli_post_submit(0, 1, 0), slurm.SUCCESS)

if failures > 0 then
   os.exit(1)
end
print("cli_filter.lua: all checks passed")
