--[[
slurm-elastic: an example cli_filter/lua script that makes

    srun --elastic=MIN:MAX ...   imply   --nodes=MIN-MAX --no-kill
    srun --elastic=N ...         imply   --nodes=N --no-kill

A SPANK option callback cannot change srun's node count (srun has read its
node options before the plugin sees --elastic), so without this script users
write `srun -N2-8 --no-kill --elastic=2:8 ...` themselves. A site that wants
the short form enables it:

    slurm.conf:  CliFilterPlugins=cli_filter/lua
    install this file as cli_filter.lua in Slurm's configuration directory
    (/etc/slurm/cli_filter.lua on Debian), on every machine that runs
    srun, sbatch or salloc.

Slurm (22.05 and later) requires all three functions below to exist.
--no-kill keeps a step alive when one of its nodes fails, so the surviving
agents can continue in a smaller rendezvous round; without it Slurm kills the
whole step. Per-task layout is left alone: the plugin checks for one task per
node and says what to add.

If your site already has a cli_filter.lua, copy elastic_imply_nodes() into it
and call it from your slurm_cli_pre_submit.
--]]

-- Returns MIN, MAX for "MIN:MAX" or "N"; nil for no value, "set" (bare
-- --elastic: exactly the step's nodes), "off" and anything malformed (the
-- plugin itself reports malformed values with a precise message).
function elastic_node_range(value)
   if value == nil or value == "set" or value == "" then
      return nil
   end
   local lo, hi = string.match(value, "^(%d+):(%d+)$")
   if lo == nil then
      lo = string.match(value, "^(%d+)$")
      hi = lo
   end
   if lo == nil then
      return nil
   end
   lo, hi = tonumber(lo), tonumber(hi)
   if lo < 1 or hi < lo then
      return nil
   end
   return lo, hi
end

-- options.spank is a table per SPANK plugin (ours is "elastic"), holding each
-- of its options that was given ("set" for an option given without a value).
function elastic_imply_nodes(options)
   local spank = options.spank
   if spank == nil or spank["elastic"] == nil then
      return
   end
   local lo, hi = elastic_node_range(spank["elastic"]["elastic"])
   if lo == nil then
      return
   end
   if lo == hi then
      options["nodes"] = tostring(lo)
   else
      options["nodes"] = lo .. "-" .. hi
   end
   options["no-kill"] = "set"
end

function slurm_cli_setup_defaults(options, early_pass)
   return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, pack_offset)
   elastic_imply_nodes(options)
   return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, job_id, step_id)
   return slurm.SUCCESS
end
